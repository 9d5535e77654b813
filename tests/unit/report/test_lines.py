"""Long terminal lines break after a clause, never inside an interval, and give their text back."""

from __future__ import annotations

import pytest

from rotscope.report.lines import clause_wrap

SENTENCE = (
    "Effective length of fake/curve-600 on niah: 512 tokens (nolima-0.85 of the base at 512 tokens; "
    "95% bracket: 512 to beyond 2,048 tokens: the data cannot place it; the point is within noise of "
    "the threshold at 1,024); accuracy 0.67 [0.22, 1.00] at 512 tokens, falling to 0.00 [0.00, 0.49] "
    "at 1,024 tokens, a paired gap of -0.67 [-1.00, +0.08] on 6 instances, an interval that does not "
    "rule out no loss."
)


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_sentence_breaks_after_clauses_within_the_width_and_joins_back(width: int) -> None:
    lines = clause_wrap(SENTENCE, width)
    assert len(lines) > 1
    assert all(len(line) <= width for line in lines)
    assert " ".join(lines) == SENTENCE
    for line in lines:
        assert line.count("[") == line.count("]")  # no interval cut in two


def test_continuations_take_the_indent_and_a_short_line_stays_whole() -> None:
    lines = clause_wrap(SENTENCE, 70, indent="    ")
    assert not lines[0].startswith(" ") and all(line.startswith("    ") for line in lines[1:])
    assert all(len(line) <= 70 for line in lines)
    assert clause_wrap("short; line", 70, indent="    ") == ["short; line"]


def test_a_clause_longer_than_the_line_is_cut_between_words() -> None:
    words = " ".join(["word"] * 40)
    lines = clause_wrap(words, 50)
    assert all(len(line) <= 50 for line in lines) and " ".join(lines) == words
