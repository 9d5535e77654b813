"""Generated records of the ``latent`` family, in the shape of ``tasks/data/latent.yaml``.

Each draws a scene (what the base quantity is of), a base quantity in words and two different
proper fractions of it whose products are whole and differ from the base; the names are invented
(``Inventor``). ``latent`` checks a drawn record exactly as it checks a written one.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import TypedDict

from rotscope.tasks.invented import Inventor


class LatentRecord(TypedDict):
    """One latent case as written in ``tasks/data/latent.yaml`` or drawn by ``draw_records``."""

    id: str
    anchor: str
    anchor_words: str
    anchor_value: int
    fraction_text: str
    fraction: str
    superseded_text: str
    superseded_fraction: str
    question: str
    answer: str
    unit: str


PREFIX = "If a rule was revised, the latest revision applies. "
OLD = "An earlier revision, since replaced: "
# (anchor, fraction statement, question; each over {a}, {b}, {words}/{share}; the question's unit,
#  and the base quantities in words with their value in that unit)
_SCENES: tuple[tuple[str, str, str, str, tuple[tuple[str, int], ...]], ...] = (
    ("Scheduler note: each batch step on the {a} cluster is allotted {words} of wall time.",
     "the {b} stage may spend {share} of each {a} batch step.",
     "How many seconds may the {b} stage spend in one {a} batch step?", "seconds",
     (("two minutes", 120), ("three minutes", 180), ("four minutes", 240), ("one hour", 3600))),
    ("Loading rule: every pallet leaving the {a} yard carries {words} crates.",
     "on each {a} pallet, {share} of the crates must hold {b} glassware.",
     "How many crates on one {a} pallet must hold {b} glassware?", "crates",
     (("a dozen", 12), ("two dozen", 24), ("three dozen", 36), ("a gross", 144), ("sixty", 60))),
    ("Lab rule: each {a} sample flask is filled with {words} of buffer.",
     "the {b} assay may draw {share} of the buffer in one {a} flask.",
     "How many millilitres of buffer may the {b} assay draw from one {a} flask?", "millilitres",
     (("one litre", 1000), ("two litres", 2000), ("half a litre", 500), ("three litres", 3000))),
    ("Survey rule: each {a} trail section is {words} long.",
     "the {b} crew may resurface {share} of one {a} trail section.",
     "How many metres of one {a} trail section may the {b} crew resurface?", "metres",
     (("one kilometre", 1000), ("two kilometres", 2000), ("half a kilometre", 500))),
    ("Kitchen rule: each {a} flour sack holds {words} of flour.",
     "the {b} bakery may use {share} of one {a} sack per batch.",
     "How many grams of one {a} sack may the {b} bakery use per batch?", "grams",
     (("one kilogram", 1000), ("two kilograms", 2000), ("five kilograms", 5000))),
    ("Shift rule: each {a} ward shift lasts {words}.",
     "the {b} rota may book {share} of one {a} ward shift for training.",
     "How many minutes of one {a} ward shift may the {b} rota book for training?", "minutes",
     (("one hour", 60), ("two hours", 120), ("three hours", 180), ("four hours", 240))),
)  # fmt: skip
_SHARES = (
    ("half", Fraction(1, 2)), ("a third", Fraction(1, 3)), ("two thirds", Fraction(2, 3)),
    ("a quarter", Fraction(1, 4)), ("three quarters", Fraction(3, 4)), ("a fifth", Fraction(1, 5)),
    ("two fifths", Fraction(2, 5)), ("three fifths", Fraction(3, 5)), ("a tenth", Fraction(1, 10)),
    ("three tenths", Fraction(3, 10)), ("a sixth", Fraction(1, 6)), ("an eighth", Fraction(1, 8)),
)  # fmt: skip


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def draw_records(first_number: int, count: int, written: list[str]) -> list[LatentRecord]:
    """``count`` records numbered from ``first_number``; no name of them is a word of ``written``."""
    inventor = Inventor("latent", written)
    rng = random.Random("latent-draws")
    records: list[LatentRecord] = []
    for index in range(count):
        anchor, statement, question, unit, bases = _SCENES[index % len(_SCENES)]
        words, value = rng.choice(bases)
        shares = [(w, f) for w, f in _SHARES if (value * f).denominator == 1 and value * f != value]
        (new_words, new), (old_words, old) = rng.sample(shares, 2)
        names = {"a": inventor.name(), "b": inventor.name()}
        records.append(
            {
                "id": f"latent-{first_number + index:02d}",
                "anchor": anchor.format(words=words, **names),
                "anchor_words": words,
                "anchor_value": value,
                "fraction_text": _sentence(statement.format(share=new_words, **names)),
                "fraction": str(new),
                "superseded_text": OLD + statement.format(share=old_words, **names),
                "superseded_fraction": str(old),
                "question": PREFIX + question.format(**names),
                "answer": str(value * new),
                "unit": unit,
            }
        )
    return records
