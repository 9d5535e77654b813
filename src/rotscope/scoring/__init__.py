"""Scoring replies: deterministic scorers registered by answer kind (the ``rotscope.scorers`` entry
points), and the optional judge."""

from rotscope.answer_kinds import (
    SCORERS,
    AnswerKindInfo,
    Scorer,
    check_kind,
    instruction_for,
    kind_info,
    register_scorer,
)
from rotscope.scoring.deterministic import score, score_parts

__all__ = [
    "SCORERS",
    "AnswerKindInfo",
    "Scorer",
    "check_kind",
    "instruction_for",
    "kind_info",
    "register_scorer",
    "score",
    "score_parts",
]
