"""Where a reply's answer is complete (``types.AnswerStop``): the one rule every backend applies,
whether it reads the text as it decodes (llama.cpp in process, transformers) or hands the stop
sequences to a server's own ``stop`` parameter.

It sits in the bottom layer so backends and scorers read the same rule: the ``Answer:`` marker the
number and choice scorers look for is defined here (``ANSWER_MARKER``), and a reply stopped at its
first ``Answer:`` line holding a value is read by them as the full reply would have been wherever
the model ends its reply there, as the instruction asks.
"""

from __future__ import annotations

import re

from rotscope.types import AnswerStop

ANSWER_MARKER = re.compile(r"\banswer(?:\W{0,3}:|\s+is\b)", re.IGNORECASE)
"""``Answer:`` as requested, also ``**Answer:**`` and ``the (final) answer is``."""
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
CHOICE = re.compile(r"\b([A-Z]|[1-9])\b")
_VALUES = {"digits": NUMBER, "label": CHOICE}

SENTENCE_END = ".\n"
"""A sentence that ends its line: after it a one-sentence answer (a name, a phrase, a list) is
complete. A line break alone is not enough: ``The code is:`` then the value on the next line."""


def answer_line_end(text: str, value: str) -> int | None:
    """The end (after its line break) of the first line of ``text`` that holds an answer marker
    followed by a ``value`` (``digits``: a number; ``label``: an option's letter or digit) on the
    same line; ``None`` before one."""
    pattern = _VALUES[value]
    for marker in ANSWER_MARKER.finditer(text):
        line_end = text.find("\n", marker.end())
        if line_end < 0:
            return None
        if pattern.search(text, marker.end(), line_end):
            return line_end + 1
    return None


def answer_end(text: str, stop: AnswerStop) -> int | None:
    """Where the reply ``text`` (decoded so far) is complete under ``stop``: it is kept as
    ``text[:end]``, the same cut a server's ``stop`` makes for a stop sequence (the sequence left
    out); ``None`` while the answer is not complete."""
    ends = [at for string in stop.strings if (at := text.find(string)) >= 0]
    if stop.answer_line is not None and (line := answer_line_end(text, stop.answer_line)) is not None:
        ends.append(line)
    return min(ends) if ends else None
