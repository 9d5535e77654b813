"""Reply answers (``kind: reply``, the ``coreference`` family, OpenAI's MRCR): the reply must open
with a code (``oracle.items[0]``) and then repeat an earlier turn (``oracle.answer``) exactly.

A reply passes when it starts with the code and the rest equals the turn after white space is
normalised (runs of white space as one space, none at the ends). MRCR's own grade is recorded as
the row's partial credit (``claim_report.partial.similarity``, averaged per cell as ``mean_similarity``):
``difflib.SequenceMatcher(None, reply_without_code, turn).ratio()``, 0 when the code is missing,
computed on the raw strings as MRCR's grader does.

A failing reply is traced to the turn it most resembles (the highest ratio, at least ``MATCH``)
among the expected turn and the oracle's traps: ``wrong_ordinal`` (another reply of the same topic
and form, an ordinal before or after), ``neighbour`` (the reply of the exchange just before or
after the target's); the expected turn itself without the code is ``missing_prefix``, with the
code but not exact (cut short, altered) ``inexact``. A reply like none of them is ``abstained``
when it abstains or is empty, else ``other``. Retrieval comes first: a wrong turn without the code
is ``wrong_ordinal`` or ``neighbour``, not ``missing_prefix``.
"""

from __future__ import annotations

from rotscope._util.similarity import COPY_RATIO, ratio
from rotscope.answer_kinds import register_scorer
from rotscope.scoring.deterministic import is_abstention, score
from rotscope.types import Case, ClaimReport, Completion, Score

MATCH = COPY_RATIO
"""The similarity ratio from which a reply counts as a copy of a turn (for its category)."""
WRONG_ORDINAL = "wrong_ordinal"
NEIGHBOUR = "neighbour"
MISSING_PREFIX = "missing_prefix"
INEXACT = "inexact"
OTHER = "other"
CATEGORIES = (WRONG_ORDINAL, NEIGHBOUR, MISSING_PREFIX, INEXACT, "abstained", OTHER)


def squeeze(text: str) -> str:
    """White space normalised: runs of it as one space, none at the ends."""
    return " ".join(text.split())


def similarity(reply: str, prefix: str, target: str) -> float:
    """MRCR's grade: 0 unless ``reply`` starts with ``prefix``, else the ``SequenceMatcher`` ratio
    of the rest against ``target``."""
    if not reply.startswith(prefix):
        return 0.0
    return ratio(reply.removeprefix(prefix), target)


def _closest(body: str, candidates: list[tuple[str, str]]) -> str | None:
    """The category of the candidate turn ``body`` most resembles (ratio at least ``MATCH``;
    the first listed wins a tie), or ``None``."""
    wanted = squeeze(body)
    best, found = MATCH, None
    for category, text in candidates:
        alike = 1.0 if squeeze(text) == wanted else ratio(wanted, squeeze(text))
        if alike > best or (alike == best and found is None):
            best, found = alike, category
    return found


@register_scorer(
    "reply",
    measures=("similarity",),
    stated=lambda oracle: (f"{oracle.items[0]}{oracle.answer}",) if oracle.items else (),
)
def score_reply(case: Case, completion: Completion, filler: str | None) -> Score:
    """``correct`` for the code then the turn exactly (white space normalised); otherwise the
    category of the module's docstring. The claim report carries MRCR's similarity ratio. An
    evidence-absent control (an abstain oracle) is scored as any control is."""
    oracle = case.oracle
    if completion.error is not None:
        return Score("error", "error")
    if oracle.abstain or not oracle.items:
        return score(oracle, completion, filler)
    prefix, target = oracle.items[0], oracle.answer
    reply = completion.text.strip()
    report = ClaimReport(
        partial={"similarity": similarity(completion.text, prefix, target)}
    )  # MRCR: the raw reply
    prefixed = reply.startswith(prefix)
    body = reply.removeprefix(prefix)
    if prefixed and squeeze(body) == squeeze(target):
        return Score("correct", claims=report)
    category = _closest(body, [("target", target), *oracle.traps])
    if category == "target":
        return Score("incorrect", INEXACT if prefixed else MISSING_PREFIX, report)
    if category is not None:
        return Score("incorrect", category, report)
    if not body.strip() or is_abstention(body):
        return Score("abstained", "abstained", report)
    return Score("incorrect", OTHER, report)
