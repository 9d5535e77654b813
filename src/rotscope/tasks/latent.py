"""``latent``: the answer is never written. One piece states a base quantity in words, another
far away states this item's fraction of it; the answer is their product. A superseded revision
of the fraction, placed earlier, competes with it (the question states the recency rule).

Failure categories: ``anchor_only`` (returned the base quantity), ``superseded`` (used the old
revision), ``wrong_answer`` (another value), ``abstained``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import cast

from rotscope._util.text import mentions
from rotscope.tasks import DEFAULT_CASES, register_counted_cases
from rotscope.tasks.casefile import load_records
from rotscope.tasks.invented import MAX_CASES, check_count
from rotscope.tasks.latent_draws import LatentRecord, draw_records
from rotscope.types import Case, Evidence, Oracle

_WHOLE_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12, "gross": 144,
}  # fmt: skip
NUMBER_FACTORS: dict[str, Fraction] = {
    **{word: Fraction(number) for word, number in _WHOLE_NUMBERS.items()},
    "half": Fraction(1, 2),
    "quarter": Fraction(1, 4),
}
UNITS: dict[str, tuple[str, Fraction]] = {
    # unit word -> (dimension, size in the dimension's base unit)
    "millisecond": ("time", Fraction(1, 1000)), "second": ("time", Fraction(1)),
    "minute": ("time", Fraction(60)),
    "hour": ("time", Fraction(3600)), "day": ("time", Fraction(86400)), "week": ("time", Fraction(604800)),
    "centimetre": ("length", Fraction(1, 100)), "metre": ("length", Fraction(1)),
    "kilometre": ("length", Fraction(1000)), "millilitre": ("volume", Fraction(1, 1000)),
    "litre": ("volume", Fraction(1)), "gram": ("mass", Fraction(1)), "kilogram": ("mass", Fraction(1000)),
}  # fmt: skip
IGNORED_WORDS = {"full", "of"}


def _unit(word: str) -> tuple[str, Fraction] | None:
    return UNITS.get(word.removesuffix("s"))


def quantity_in(words: str, unit: str) -> Fraction:
    """The quantity ``words`` name, in ``unit``: number words multiply ("three dozen" = 36,
    "half a kilometre" = 0.5 km); a unit word converts ("one full second" in milliseconds = 1000);
    without a unit word the count is taken as it is ("a gross" crates = 144)."""
    value = Fraction(1)
    source: tuple[str, Fraction] | None = None
    for word in words.lower().split():
        if word in NUMBER_FACTORS:
            value *= NUMBER_FACTORS[word]
        elif _unit(word) is not None:
            source = _unit(word)
        elif word not in IGNORED_WORDS:
            raise ValueError(f"unknown word {word!r} in quantity {words!r}")
    target = _unit(unit)
    if source is None:
        return value
    if target is None or target[0] != source[0]:
        raise ValueError(f"quantity {words!r} cannot be expressed in {unit}")
    return value * source[1] / target[1]


def latent_case(record: LatentRecord) -> Case:
    """The case of one record (written or drawn), or ``ValueError`` naming what does not hold."""
    case_id = record["id"]
    anchor_value = Fraction(int(record["anchor_value"]))
    if record["anchor_words"] not in record["anchor"]:
        raise ValueError(f"latent case {case_id}: anchor_words are not in the anchor")
    if quantity_in(record["anchor_words"], record["unit"]) != anchor_value:
        raise ValueError(
            f"latent case {case_id}: {record['anchor_words']!r} is not {anchor_value} {record['unit']}"
        )
    fraction, old = Fraction(record["fraction"]), Fraction(record["superseded_fraction"])
    answer, superseded = anchor_value * fraction, anchor_value * old
    if not (0 < fraction < 1 and 0 < old < 1) or answer.denominator != 1 or superseded.denominator != 1:
        raise ValueError(f"latent case {case_id}: fractions must be proper and give whole numbers")
    if str(answer) != str(record["answer"]) or len({answer, superseded, anchor_value}) != 3:
        raise ValueError(f"latent case {case_id}: answer must be anchor x fraction and differ from the traps")
    texts = [record["anchor"], record["fraction_text"], record["superseded_text"], record["question"]]
    for value in {str(answer), str(superseded)}:
        if any(mentions(text, value) for text in texts):
            raise ValueError(f"latent case {case_id}: {value} is written in the case; it must be computed")
    return Case(
        case_id=case_id,
        task="latent",
        evidence=(
            Evidence("anchor", record["anchor"], "support"),
            Evidence("superseded", record["superseded_text"], "superseded"),
            Evidence("fraction", record["fraction_text"], "answer"),
        ),
        question=record["question"],
        oracle=Oracle(
            answer=str(answer),
            traps=(("anchor_only", str(anchor_value)), ("superseded", str(superseded))),
        ),
        guarded=(str(answer), str(superseded), str(anchor_value)),
    )


def build_latent_cases() -> list[Case]:
    """The written cases of ``tasks/data/latent.yaml``."""
    return [latent_case(record) for record in cast(list[LatentRecord], load_records("latent"))]


@register_counted_cases("latent", MAX_CASES)
def latent_cases(count: int = DEFAULT_CASES) -> list[Case]:
    """The written cases, then drawn ones (``latent_draws``) checked the same way."""
    check_count("latent", count, MAX_CASES, "generated names stay unique")
    written = build_latent_cases()
    texts = [t for case in written for t in (case.question, *(e.text for e in case.evidence))]
    drawn = draw_records(len(written) + 1, max(0, count - len(written)), texts)
    return written[:count] + [latent_case(record) for record in drawn]
