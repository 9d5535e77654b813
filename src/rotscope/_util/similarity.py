"""How alike two texts are, as OpenAI's MRCR grades a reply: ``difflib``'s ratio.

Shared by the ``reply`` scorer (a reply that resembles a turn this much counts as a copy of it) and
the ``coreference`` family (the replies a case asks among must not resemble each other this much,
so a copy of one can never be taken for another)."""

from __future__ import annotations

from difflib import SequenceMatcher

COPY_RATIO = 0.8
"""The ratio from which a text counts as a copy of another."""


def ratio(a: str, b: str) -> float:
    """``difflib.SequenceMatcher(None, a, b).ratio()``: 2 * matched characters / both lengths."""
    return SequenceMatcher(None, a, b).ratio()
