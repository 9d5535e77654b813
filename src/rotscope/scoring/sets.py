"""Set answers (``kind: set``): the reply must name every expected string, as RULER's
``string_match_all`` asks; the fraction it names is recorded as the row's partial credit.

RULER scores ``sum(ref.lower() in pred.lower()) / len(refs)``: substring containment. Here each
string must occur as a whole word after ``normalise`` (so ``QXKPT`` is not found in ``QXKPTZ``);
families that use this kind generate strings none of which contains another, where the two agree.
The outcome is ``correct`` only at full recall; the strings missed are the row's ``claim_report``
``missing`` list and its ``recall`` (``1 - len(missing) / len(items)``), which the summary averages
per cell as ``mean_recall``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rotscope.answer_kinds import register_scorer
from rotscope.answer_stop import SENTENCE_END
from rotscope.scoring.deterministic import (
    HEDGED,
    _wrong_answer_category,
    contains_answer,
    is_abstention,
    score,
)
from rotscope.types import AnswerStop, Case, ClaimReport, Completion, Score

MISSED_ONE = "missed_one"
PARTIAL = "partial"


def missing_items(reply: str, items: Sequence[str]) -> tuple[str, ...]:
    """The expected strings the reply does not name."""
    return tuple(item for item in items if not contains_answer(reply, item))


def recall(reply: str, items: Sequence[str]) -> float:
    """The fraction of ``items`` the reply names (RULER's per-sample ``string_match_all``)."""
    return 1.0 - len(missing_items(reply, items)) / len(items) if items else 0.0


@register_scorer(
    "set",
    instruction=(
        "Answer with every name asked for, exactly as in the context, separated by commas. "
        "If the context does not say, reply: not in the context."
    ),
    measures=("recall",),
    stated=lambda oracle: (oracle.answer,),
    stop=AnswerStop(strings=(SENTENCE_END,)),
    max_tokens=96,
)
def score_set(case: Case, completion: Completion, filler: str | None) -> Score:
    """Full recall is ``correct`` (a reply that also abstains is ``hedged``). A wrong reply is, in
    this order: ``abstained`` (names nothing and abstains or is empty); a trap's category where it
    names a trap's value that is no item (the family lists them: a distractor chain's name, the
    value instead of a name, a runner-up word); the category of the one item it misses (a trap
    whose value is that item, such as a chain's ``missed_last_hop``, else ``missed_one``);
    ``partial`` (some items); else the generic categories. The row's claim report keeps the items
    missed and the recall. An evidence-absent control is scored as any control is."""
    oracle = case.oracle
    if completion.error is not None:
        return Score("error", "error")
    if oracle.abstain or not oracle.items:
        return score(oracle, completion, filler)
    reply = completion.text
    missing = missing_items(reply, oracle.items)
    report = ClaimReport(missing=missing, partial={"recall": 1.0 - len(missing) / len(oracle.items)})
    if not missing:
        return Score("incorrect", HEDGED, report) if is_abstention(reply) else Score("correct", claims=report)
    if len(missing) == len(oracle.items) and (not reply.strip() or is_abstention(reply)):
        return Score("abstained", "abstained", report)
    for category, value in oracle.traps:
        if value not in oracle.items and contains_answer(reply, value):
            return Score("incorrect", category, report)
    if len(oracle.items) > 1 and len(missing) == 1:
        missed = next((c for c, value in oracle.traps if value == missing[0]), MISSED_ONE)
        return Score("incorrect", missed, report)
    if len(missing) < len(oracle.items):
        return Score("incorrect", PARTIAL, report)
    return Score("incorrect", _wrong_answer_category(oracle, reply, filler), report)
