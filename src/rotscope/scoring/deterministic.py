"""Deterministic scoring: normalised answer matching, abstention detection, one outcome per item."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation

from rotscope.answer_kinds import SCORERS, register_scorer
from rotscope.answer_stop import ANSWER_MARKER, CHOICE, NUMBER, SENTENCE_END
from rotscope.types import AnswerStop, Case, ClaimReport, Claims, Completion, Oracle, Score

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
HEDGED = "hedged"
"""A reply that states the right answer and also abstains: ``incorrect``, never ``correct``."""


_CHUNK_CHARS = 1 << 20


def _without_combining(text: str) -> str:
    """``text`` less its combining marks, a chunk at a time (a long reply costs no list of its
    characters)."""
    return "".join(
        "".join(ch for ch in text[start : start + _CHUNK_CHARS] if not unicodedata.combining(ch))
        for start in range(0, len(text), _CHUNK_CHARS)
    )


def normalise(text: str) -> str:
    """Lower case, accents folded, digit groups joined (4,817 -> 4817), punctuation to spaces."""
    if not text.isascii():
        text = _without_combining(unicodedata.normalize("NFKD", text))
    text = text.lower()
    # Each pattern starts with the character it replaces, so a long reply is scanned at C speed.
    text = re.sub(r"[,_](?<=\d[,_])(?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s-]", " ", text.replace("_", " "))
    text = re.sub(r"-(?:(?<!\w-)|(?!\w))", " ", text)
    words = [_NUMBER_WORDS.get(word, word) for word in text.split()]
    return " ".join(words)


def contains_answer(response: str, answer: str) -> bool:
    wanted = normalise(answer)
    if not wanted:
        return False
    return re.search(rf"(?<![\w-]){re.escape(wanted)}(?![\w-])", normalise(response)) is not None


def occurs_as_words(text: str, words: str) -> bool:
    """Whether ``words`` occurs in ``text`` with no word character (``\\w``) either side. A plain
    substring search: ``words`` is model output, which is never compiled into a pattern (a 50 MB
    reply would cost gigabytes, and its time would grow with it)."""
    start = text.find(words)
    while start >= 0:
        end = start + len(words)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not _word_char(before) and not _word_char(after):
            return True
        start = text.find(words, start + 1)
    return False


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def is_abstention(response: str) -> bool:
    return _ABSTENTION.search(response.lower().replace("’", "'")) is not None


def _wrong_answer_category(oracle: Oracle, response: str, filler: str | None) -> str:
    """Why a wrong answer is wrong: it names a trap (a decoy, a superseded value...), repeats
    something from the filler (``context_value``: its first line occurs in ``filler``, the filler
    text alone, never the question or the evidence), or neither."""
    for category, value in oracle.traps:
        if contains_answer(response, value):
            return category
    reply = normalise(response.strip().splitlines()[0]) if response.strip() else ""
    if filler and reply and occurs_as_words(normalise(filler), reply):
        return "context_value"
    return "wrong_answer"


_CITATION = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9._-]*)\]")
_QUOTED_CITATION = re.compile(
    r"\[([A-Za-z0-9][A-Za-z0-9._-]*)\][ \t]*[:\-\u2013\u2014]?[ \t]*[\"\u201c]([^\"\u201d]*)[\"\u201d]"
)
"""``[doc-id] "quoted words"`` (straight or curly double quotes, an optional colon or dash between)."""
HIGH_RISK_CATEGORIES = ("forbidden_claim",)


def _spaced(text: str) -> str:
    """``text`` with every run of whitespace one space, trimmed: the only normalisation a quote gets."""
    return " ".join(text.split())


def quoted_citations(response: str, quotes: tuple[tuple[str, str], ...]) -> tuple[set[str], list[str]]:
    """The evidence ids a reply cites with a quote found in that piece's span (an exact substring
    once whitespace is normalised: case, punctuation and words as written), and the ids it cites
    with a quote that is not (in cited order, once each). A citation without a quote is neither."""
    spans = {identifier: _spaced(span) for identifier, span in quotes}
    good: set[str] = set()
    bad: list[str] = []
    for identifier, quote in _QUOTED_CITATION.findall(response):
        wanted = _spaced(quote)
        if identifier in spans and wanted and wanted in spans[identifier]:
            good.add(identifier)
        elif identifier not in bad:
            bad.append(identifier)
    return good, bad


def claim_report(claims: Claims, response: str) -> ClaimReport:
    """Which required claims the reply misses, which forbidden ones it makes, and, when the case
    asks for citations, which ids it cites that are no document of the case (a distractor, an
    invented id) and which present claims it cites no supporting document for. Where citations
    must quote (``Claims.quotes``), a claim is cited only by a supporting document cited with a
    quote from its span, and a document cited with a quote that is not in its span is a wrong
    citation."""

    def present(surfaces: tuple[str, ...]) -> bool:
        return any(contains_answer(response, surface) for surface in surfaces)

    missing = tuple(claim for claim, surfaces in claims.required if not present(surfaces))
    cited = tuple(dict.fromkeys(_CITATION.findall(response)))
    wrong: tuple[str, ...] = ()
    uncited: tuple[str, ...] = ()
    if claims.cite is not None:
        wrong = tuple(identifier for identifier in cited if identifier not in claims.evidence_ids)
        supported = set(cited)
        if claims.quotes is not None:
            supported, misquoted = quoted_citations(response, claims.quotes)
            wrong = tuple(dict.fromkeys([*wrong, *misquoted]))
        uncited = tuple(
            claim for claim, ids in claims.cite if claim not in missing and not set(ids) & supported
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
    return bool(reply) and any(occurs_as_words(normalise(text), reply) for _, text in claims.distractors)


def score_claims(oracle: Oracle, claims: Claims, response: str, filler: str | None) -> Score:
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
    return Score("incorrect", _wrong_answer_category(oracle, response, filler), report)


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


def _marked_line(reply: str) -> str | None:
    """The rest of the line after the reply's last answer marker."""
    markers = list(ANSWER_MARKER.finditer(reply))
    if not markers:
        return None
    return reply[markers[-1].end() :].split("\n", 1)[0]


def _as_number(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


_BARE_NUMBER = re.compile(r"\s*\$?(-?\d[\d,]*(?:\.\d+)?)\.?\s*")


def final_number(reply: str) -> Decimal | None:
    """The last number on the line of the reply's last ``Answer:`` marker (``Answer: $1,234`` is
    1234, ``Answer: 5 + 3 = 8`` is 8), or the whole reply when it is one number and nothing else;
    ``None`` otherwise (the reply broke the requested format)."""
    line = _marked_line(reply)
    if line is None:
        bare = _BARE_NUMBER.fullmatch(reply)
        return _as_number(bare.group(1)) if bare else None
    numbers = NUMBER.findall(line)
    return _as_number(numbers[-1]) if numbers else None


_BARE_CHOICE = re.compile(r"\s*\(?([A-Z]|[1-9])\)?\.?\s*")


def final_choice(reply: str) -> str | None:
    """The first option label (a capital letter or a digit) after the reply's last ``Answer:``, or
    the whole reply when it is one label and nothing else."""
    line = _marked_line(reply)
    found = CHOICE.search(line) if line is not None else _BARE_CHOICE.fullmatch(reply)
    return found.group(1) if found else None


def numbers_in(text: str) -> set[Decimal]:
    return {number for token in NUMBER.findall(text) if (number := _as_number(token)) is not None}


def score_final_answer(
    oracle: Oracle, completion: Completion, filler: str | None = None, own: str = ""
) -> Score:
    """Score a reply that must end with ``Answer: <number>`` or ``Answer: <letter>``.

    A wrong number is traced to the filler: ``filler_answer`` when it is the answer of a filler
    item (the oracle's traps), ``filler_number`` when it appears in ``filler`` (the filler text
    alone) but not in ``own`` (the target's own problem and question: a number the model read
    there is no interference), else ``wrong_answer``. A reply without the format is ``format``; a
    right answer whose ``Answer:`` line also abstains is ``hedged`` (see ``score``)."""
    if completion.error is not None:
        return Score("error", "error")
    response = completion.text
    got: Decimal | str | None
    got = final_number(response) if oracle.kind == "number" else final_choice(response)
    if got is None:
        if not response.strip() or is_abstention(response):
            return Score("abstained", "abstained")
        return Score("incorrect", "format")
    expected = _as_number(oracle.answer) if oracle.kind == "number" else oracle.answer
    if got == expected:
        # Only the answer line: a worked solution says "not given directly" on its way there.
        if is_abstention(_marked_line(response) or ""):
            return Score("incorrect", HEDGED)
        return Score("correct")
    if isinstance(got, Decimal):
        for category, value in oracle.traps:
            if got == _as_number(value):
                return Score("incorrect", category)
        if filler and got in numbers_in(filler) and got not in numbers_in(own):
            return Score("incorrect", "filler_number")
    return Score("incorrect", "wrong_answer")


WORKED_MAX_TOKENS = 256
"""The reply budget of a number or choice question: room for a worked solution before its
``Answer:`` line, where decoding stops."""


@register_scorer(
    "phrase",
    instruction=(
        "Answer with the exact name, number or phrase from the context. "
        "If the context does not say, reply: not in the context."
    ),
    stated=lambda oracle: oracle.accepted(),
    stop=AnswerStop(strings=(SENTENCE_END,)),
    max_tokens=32,
)
def score_phrase(case: Case, completion: Completion, filler: str | None) -> Score:
    """The answer (or an alias) anywhere in the reply; see ``score``."""
    return score(case.oracle, completion, filler)


@register_scorer(
    "number",
    instruction="End your reply with the final answer on a line of its own in the form Answer: <number>",
    stated=lambda oracle: tuple(f"Answer: {form}" for form in oracle.accepted()),
    stop=AnswerStop(answer_line="digits"),
    max_tokens=WORKED_MAX_TOKENS,
)
@register_scorer(
    "choice",
    instruction="End your reply with the chosen option on a line of its own in the form Answer: <letter>",
    stated=lambda oracle: tuple(f"Answer: {form}" for form in oracle.accepted()),
    stop=AnswerStop(answer_line="label"),
    max_tokens=WORKED_MAX_TOKENS,
)
def score_final(case: Case, completion: Completion, filler: str | None) -> Score:
    """The reply's final ``Answer:``, with wrong numbers traced to the filler but not to the
    case's own evidence and question."""
    own = "\n".join([*(evidence.text for evidence in case.evidence), case.question])
    return score_final_answer(case.oracle, completion, filler, own)


def score_parts(case: Case, completion: Completion, filler: str | None = None) -> list[Score]:
    """One score per question of ``case`` (see ``Case.scored_parts``), by the scorer registered for
    its oracle's kind. A multi-question reply that breaks the output contract scores every
    question ``incorrect`` with category ``format``."""
    parts = case.scored_parts()
    if not case.parts or completion.error is not None:
        return [SCORERS.get(part.oracle.kind)(part, completion, filler) for _, part in parts]
    answers = parse_labelled_answers(completion.text, [label for label, _ in parts])
    if answers is None:
        return [Score("incorrect", "format") for _ in parts]
    return [
        SCORERS.get(part.oracle.kind)(part, replace(completion, text=answers[label]), filler)
        for label, part in parts
    ]


def score(oracle: Oracle, completion: Completion, filler: str | None = None) -> Score:
    """Exactly one of correct / incorrect / abstained / error for a reply.

    An infrastructure failure is ``error`` (never counted as wrong). For an evidence-absent
    control the right reply is an abstention; any answer there is an incorrect (hallucinated) one.
    A reply that names the answer and also abstains ("KESTRA-9 is not in the context") is
    ``incorrect`` with category ``hedged``: it is no answer a reader can use, since it disowns
    what it states, and no abstention, since it states the answer; counted ``abstained`` it would
    read as a clean refusal that hides what the model found. ``filler`` (the prompt's filler text
    alone) lets a wrong answer be traced to a value copied from the filler.
    """
    if completion.error is not None:
        return Score("error", "error")
    response = completion.text
    if oracle.claims is not None:
        return score_claims(oracle, oracle.claims, response, filler)
    if oracle.abstain:
        if is_abstention(response):
            return Score("correct")
        # An empty reply is no explicit abstention, but no invented answer either.
        return Score("incorrect", "hallucinated" if response.strip() else "empty")
    if any(contains_answer(response, accepted) for accepted in oracle.accepted()):
        if is_abstention(response):
            return Score("incorrect", HEDGED)
        return Score("correct")
    if is_abstention(response) or not response.strip():
        return Score("abstained", "abstained")
    return Score("incorrect", _wrong_answer_category(oracle, response, filler))
