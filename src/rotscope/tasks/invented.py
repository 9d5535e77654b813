"""Invented names, labels and numbers for generated cases: seeded, each handed out once.

A family that makes more cases than it has written ones draws their entities here, so no two
cases share a name or an answer and no generated name is a word of the written cases.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable

from rotscope.errors import BadInput

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "t",
           "tr", "v", "w")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("", "l", "n", "r", "s", "nd", "rk", "m")
_ENDINGS = ("ford", "wick", "mere", "dale", "holt", "brook", "moor", "ley", "ton", "by")
MAX_CASES = 1000
"""Most cases a family generates: names and values stay quick to draw unused."""
_TRIES = 1000


class Inventor:
    """Invented words and values, none handed out twice, none a word of ``written`` texts."""

    def __init__(self, seed: str, written: Iterable[str] = ()) -> None:
        self._rng = random.Random(seed)
        self._used: set[str] = {word.lower() for text in written for word in re.findall(r"[\w-]+", text)}

    def _fresh(self, draw: Callable[[], object]) -> str:
        for _ in range(_TRIES):
            value = str(draw())
            if value.lower() not in self._used:
                self._used.add(value.lower())
                return value
        raise BadInput("cases_per_task: too many cases to invent distinct names and values for")

    def _syllables(self, count: int) -> str:
        rng = self._rng
        return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(count))

    def name(self) -> str:
        """A place or organisation name: a syllable and an ending (``Dravford``)."""
        return self._fresh(lambda: (self._syllables(1) + self._rng.choice(_ENDINGS)).capitalize())

    def person(self) -> str:
        """A first and a last name (``Tamir Kelbrook``)."""
        first = self._fresh(lambda: self._syllables(2).capitalize())
        return f"{first} {self.name()}"

    def label(self) -> str:
        """A code of capitals and a number (``VORNA-47``)."""
        return self._fresh(lambda: f"{self._syllables(2).upper()}-{self._rng.randint(2, 99)}")

    def number(self, low: int, high: int) -> int:
        return int(self._fresh(lambda: self._rng.randint(low, high)))


def check_count(task: str, count: int, maximum: int, why: str) -> None:
    """``BadInput`` when a family cannot make ``count`` cases."""
    if count > maximum:
        raise BadInput(f"cases_per_task: {task} has at most {maximum} cases ({why}), got {count}")
