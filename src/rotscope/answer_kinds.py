"""The answer kinds scorers register: the scorer registry, each kind's prompt instruction and its
partial-credit measures.

It sits in the bottom layer so the prompt step can ask a kind's instruction without importing the
scorers (the independence contract keeps task families and scorers apart; ARCHITECTURE.md, "Where
to add things"). Looking a kind up loads its scorer through the ``rotscope.scorers`` entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rotscope.errors import BadInput
from rotscope.registry import Registry
from rotscope.types import Case, Completion, Score

Scorer = Callable[[Case, Completion, "str | None"], Score]
"""Scores one question's reply; the third argument is the prompt's filler text alone
(``RenderedPrompt.filler_text``: no evidence, question, instructions or template), to trace wrong
answers to the filler; ``None`` when unknown."""
SCORERS: Registry[Scorer] = Registry("scorer", "oracle.kind", "rotscope.scorers")
"""Scorers by the oracle's answer kind, found through the ``rotscope.scorers`` entry points (the
built-ins' as an outside package's)."""


@dataclass(frozen=True)
class AnswerKindInfo:
    """What a scorer registers with its answer kind: the instruction the prompt gives for it
    (``None``: the kind is only asked in prompts that carry their own, a session's reply) and the
    names of its partial-credit measures (``ClaimReport.partial``; a cell reports each as
    ``mean_<name>``)."""

    instruction: str | None = None
    measures: tuple[str, ...] = ()


_KINDS: dict[str, AnswerKindInfo] = {}


def register_scorer(
    kind: str, *, instruction: str | None = None, measures: tuple[str, ...] = ()
) -> Callable[[Scorer], Scorer]:
    """Register a scorer for the answer kind ``kind``, with the prompt's ``instruction`` for it and
    the names of the partial-credit ``measures`` it reports."""

    def add(scorer: Scorer) -> Scorer:
        SCORERS.register(kind)(scorer)
        _KINDS[kind] = AnswerKindInfo(instruction, measures)
        return scorer

    return add


def kind_info(kind: str) -> AnswerKindInfo:
    """What the scorer of ``kind`` registered; an unknown kind is bad input naming the known."""
    SCORERS.get(kind)
    return _KINDS.get(kind, AnswerKindInfo())


def instruction_for(kind: str) -> str:
    """The answer instruction the prompt gives for ``kind``: the same words in every layout."""
    instruction = kind_info(kind).instruction
    if instruction is None:
        raise BadInput(f"oracle.kind: answer kind {kind!r} registers no prompt instruction")
    return instruction


def check_kind(kind: object) -> str:
    """``kind`` when a scorer is registered for it; else bad input naming the known kinds."""
    if not isinstance(kind, str) or kind not in SCORERS:
        raise BadInput(f"oracle.kind: unknown answer kind {kind!r} (known: {', '.join(SCORERS.names())})")
    return kind
