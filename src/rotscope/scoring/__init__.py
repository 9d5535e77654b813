"""Scoring replies: deterministic scorers registered by answer kind (the ``rotscope.scorers`` entry
points), and the optional judge."""

from rotscope.scoring.deterministic import SCORERS, Scorer, register_scorer, score, score_parts

__all__ = ["SCORERS", "Scorer", "register_scorer", "score", "score_parts"]
