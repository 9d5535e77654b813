"""Deterministic scoring: normalised answer matching, abstention detection, one outcome per item."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace

from rotscope.types import Case, ClaimReport, Claims, Completion, Oracle, Score

_NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
}
ABSTENTION_PATTERNS = (
    r"not in the context",
    r"not (?:mentioned|stated|specified|given|provided|found|present|included)",
    r"(?:does|do|did) not (?:say|mention|state|specify|contain|include|provide)",
    r"doesn'?t (?:say|mention|state|specify|contain|include|provide)",
    r"no (?:information|mention|answer)",
    r"(?:cannot|can'?t|unable to) (?:find|determine|answer|tell)",
    r"\bunknown\b",
    r"i (?:do not|don'?t) know",
)
_ABSTENTION = re.compile("|".join(ABSTENTION_PATTERNS))


def normalise(text: str) -> str:
    """Lower case, accents folded, digit groups joined (4,817 -> 4817), punctuation to spaces."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"(?<=\d)[,_](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s-]|_", " ", text)
    text = re.sub(r"(?<!\w)-|-(?!\w)", " ", text)
    words = [_NUMBER_WORDS.get(word, word) for word in text.split()]
    return " ".join(words)


def contains_answer(response: str, answer: str) -> bool:
    wanted = normalise(answer)
    if not wanted:
        return False
    return re.search(rf"(?<![\w-]){re.escape(wanted)}(?![\w-])", normalise(response)) is not None


def is_abstention(response: str) -> bool:
    return _ABSTENTION.search(response.lower().replace("’", "'")) is not None


def _wrong_answer_category(oracle: Oracle, response: str, context: str | None) -> str:
    """Why a wrong answer is wrong: it names a trap (a decoy, a superseded value...), repeats
    something from the filler, or neither."""
    for category, value in oracle.traps:
        if contains_answer(response, value):
            return category
    reply = normalise(response.strip().splitlines()[0]) if response.strip() else ""
    if context is not None and reply and re.search(rf"(?<!\w){re.escape(reply)}(?!\w)", normalise(context)):
        return "context_value"
    return "wrong_answer"


_CITATION = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9._-]*)\]")
HIGH_RISK_CATEGORIES = ("forbidden_claim",)


def claim_report(claims: Claims, response: str) -> ClaimReport:
    """Which required claims the reply misses, which forbidden ones it makes, and, when the case
    asks for citations, which ids it cites that are no document of the case (a distractor, an
    invented id) and which present claims it cites no supporting document for."""

    def present(surfaces: tuple[str, ...]) -> bool:
        return any(contains_answer(response, surface) for surface in surfaces)

    missing = tuple(claim for claim, surfaces in claims.required if not present(surfaces))
    cited = tuple(dict.fromkeys(_CITATION.findall(response)))
    wrong: tuple[str, ...] = ()
    uncited: tuple[str, ...] = ()
    if claims.cite is not None:
        wrong = tuple(identifier for identifier in cited if identifier not in claims.evidence_ids)
        uncited = tuple(
            claim for claim, ids in claims.cite if claim not in missing and not set(ids) & set(cited)
        )
    return ClaimReport(
        missing=missing,
        forbidden=tuple(claim for claim, surfaces in claims.forbidden if present(surfaces)),
        cited=cited,
        wrong_citations=wrong,
        missing_citations=uncited,
    )


def _copies_distractor(claims: Claims, response: str) -> bool:
    reply = normalise(response.strip().splitlines()[0]) if response.strip() else ""
    return bool(reply) and any(
        re.search(rf"(?<!\w){re.escape(reply)}(?!\w)", normalise(text)) for _, text in claims.distractors
    )


def score_claims(oracle: Oracle, claims: Claims, response: str, context: str | None) -> Score:
    """A claim-checked reply: a forbidden claim is always wrong (and high risk); otherwise every
    required claim must be present and, when asked, cited; an abstain case wants an abstention."""
    report = claim_report(claims, response)
    if report.forbidden:
        return Score("incorrect", "forbidden_claim", report)
    if oracle.abstain:
        if is_abstention(response):
            return Score("correct", claims=report)
        return Score("incorrect", "hallucinated" if response.strip() else "empty", report)
    if not report.missing:
        if report.wrong_citations:
            return Score("incorrect", "wrong_citation", report)
        if report.missing_citations:
            return Score("incorrect", "missing_citation", report)
        return Score("correct", claims=report)
    if len(report.missing) < len(claims.required):
        return Score("incorrect", "missing_claim", report)
    if is_abstention(response) or not response.strip():
        return Score("abstained", "abstained", report)
    if _copies_distractor(claims, response):
        return Score("incorrect", "distractor", report)
    return Score("incorrect", _wrong_answer_category(oracle, response, context), report)


_CONTRACT_LINE = re.compile(r"(Q\d+):[ \t]*(.*?)[ \t]*")


def parse_labelled_answers(reply: str, labels: Sequence[str]) -> dict[str, str] | None:
    """The answers of a multi-question reply, or ``None`` when it breaks the contract: exactly one
    line ``Q<k>: <answer>`` per question, each label once, nothing else (blank lines aside)."""
    answers: dict[str, str] = {}
    for line in reply.strip().splitlines():
        if not line.strip():
            continue
        match = _CONTRACT_LINE.fullmatch(line.strip())
        if match is None or match.group(1) not in labels or match.group(1) in answers:
            return None
        answers[match.group(1)] = match.group(2)
    return answers if len(answers) == len(labels) else None


def score_parts(case: Case, completion: Completion, context: str | None = None) -> list[Score]:
    """One score per question of ``case`` (see ``Case.scored_parts``). A multi-question reply that
    breaks the output contract scores every question ``incorrect`` with category ``format``."""
    parts = case.scored_parts()
    if not case.parts or completion.error is not None:
        return [score(part.oracle, completion, context) for _, part in parts]
    answers = parse_labelled_answers(completion.text, [label for label, _ in parts])
    if answers is None:
        return [Score("incorrect", "format") for _ in parts]
    return [score(part.oracle, replace(completion, text=answers[label]), context) for label, part in parts]


def score(oracle: Oracle, completion: Completion, context: str | None = None) -> Score:
    """Exactly one of correct / incorrect / abstained / error for a reply.

    An infrastructure failure is ``error`` (never counted as wrong). For an evidence-absent
    control the right reply is an abstention; any answer there is an incorrect (hallucinated) one.
    ``context`` (the prompt's text) lets a wrong answer be traced to a value copied from it.
    """
    if completion.error is not None:
        return Score("error", "error")
    response = completion.text
    if oracle.claims is not None:
        return score_claims(oracle, oracle.claims, response, context)
    if oracle.abstain:
        if is_abstention(response):
            return Score("correct")
        # An empty reply is no explicit abstention, but no invented answer either.
        return Score("incorrect", "hallucinated" if response.strip() else "empty")
    if any(contains_answer(response, accepted) for accepted in oracle.accepted()):
        return Score("correct")
    if is_abstention(response) or not response.strip():
        return Score("abstained", "abstained")
    return Score("incorrect", _wrong_answer_category(oracle, response, context))
