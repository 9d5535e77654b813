"""The answer kinds scorers register: the scorer registry, each kind's prompt instruction, its
partial-credit measures and how its answer is stated in a reply (whose likelihood a run reads:
``answer_readings``).

It sits in the bottom layer so the prompt step can ask a kind's instruction without importing the
scorers (the independence contract keeps task families and scorers apart; ARCHITECTURE.md, "Where
to add things"). Looking a kind up loads its scorer through the ``rotscope.scorers`` entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rotscope.errors import BadInput
from rotscope.registry import Registry
from rotscope.types import DEFAULT_MAX_TOKENS, AnswerStop, Case, Completion, Oracle, Score

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
    stated: Callable[[Oracle], tuple[str, ...]] | None = None
    """The answer as a right reply states it, each accepted form (``None``: the kind has no one
    right text, so no likelihood is read: a rule to follow)."""
    stop: AnswerStop | None = None
    """Where a reply's answer is complete, so decoding stops there (``generation.stop: answer``);
    ``None``: the reply runs to its end or ``max_tokens``."""
    max_tokens: int | None = None
    """The reply budget sized for the kind, used where ``generation.max_tokens`` is unset
    (``None``: ``DEFAULT_MAX_TOKENS``)."""


_KINDS: dict[str, AnswerKindInfo] = {}


def register_scorer(
    kind: str,
    *,
    instruction: str | None = None,
    measures: tuple[str, ...] = (),
    stated: Callable[[Oracle], tuple[str, ...]] | None = None,
    stop: AnswerStop | None = None,
    max_tokens: int | None = None,
) -> Callable[[Scorer], Scorer]:
    """Register a scorer for the answer kind ``kind``, with the prompt's ``instruction`` for it,
    the names of the partial-credit ``measures`` it reports, how a right reply ``stated`` the
    answer (docs/statistics.md, "Scores"), where its answer is complete (``stop``) and the reply
    budget sized for it (``max_tokens``)."""

    def add(scorer: Scorer) -> Scorer:
        SCORERS.register(kind)(scorer)
        _KINDS[kind] = AnswerKindInfo(instruction, measures, stated, stop, max_tokens)
        return scorer

    return add


def answer_readings(case: Case) -> tuple[tuple[str, str], ...]:
    """The replies whose answer's likelihood is read (docs/statistics.md, "Scores"), as (lead-in,
    answer) pairs: the lead-in is teacher-forced and not scored, the answer's tokens are (LongPPL's
    key tokens). Each form the kind states (``AnswerKindInfo.stated``) that an ``answer`` piece of
    evidence holds gets the words before it in that piece's sentence as its lead-in (``The access
    code for the Vellmoor archive is`` before `` 4817``), so the reading asks for the value where a
    reply would state it, not for a reply that opens with a bare value; a form no piece holds is
    read alone. An evidence-absent control reads its case's (``Oracle.gold``); an abstention or a
    claim check reads none."""
    oracle = case.oracle
    if oracle.gold:
        return oracle.gold
    stated = kind_info(oracle.kind).stated
    if oracle.abstain or oracle.claims is not None or stated is None:
        return ()
    pieces = [piece.text for piece in case.evidence if piece.role == "answer"]
    readings = []
    for form in stated(oracle):
        where = next((text for text in pieces if form and form in text), None)
        if where is None:
            readings.append(("", form))
            continue
        before = where[: where.index(form)].rsplit("\n", 1)[-1]
        sentence = max(before.rfind(". "), before.rfind("! "), before.rfind("? "))
        lead = before[sentence + 2 :] if sentence >= 0 else before
        readings.append((lead[:-1], f" {form}") if lead.endswith(" ") else (lead, form))
    return tuple(readings)


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


def reply_budget(case: Case, given: int | None) -> int:
    """The ``max_tokens`` of a call asking ``case``: ``given`` (``generation.max_tokens``) where the
    user set it, else its kind's size (``AnswerKindInfo.max_tokens``), summed over its questions for
    a prompt that asks several (each answered on a line of its own). The one rule: a work item
    carries it in its ``params``, and every reader of a call's budget (the backends, the limits, the
    cost estimate, the context-window checks) reads it there or through this function."""
    if given is not None:
        return given
    sizes = (kind_info(part.oracle.kind).max_tokens for _, part in case.scored_parts())
    return sum(size or DEFAULT_MAX_TOKENS for size in sizes)


def answer_stop(case: Case) -> AnswerStop | None:
    """Where decoding of a reply to ``case`` stops: its kind's rule; ``None`` for a prompt that
    asks several questions (its reply is a line per question, ``Q<k>: ...``, read whole)."""
    return None if case.parts else kind_info(case.oracle.kind).stop
