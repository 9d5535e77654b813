"""Scoring never compiles model output into a pattern: a reply is searched for as plain text."""

from __future__ import annotations

import random
import re
import unicodedata
from typing import Any

import pytest

from rotscope.scoring import deterministic
from rotscope.scoring.deterministic import occurs_as_words
from rotscope.types import Oracle


@pytest.mark.parametrize(
    ("text", "words", "found"),
    [
        ("the key is 4817 here", "4817", True),
        ("the key is 48170 here", "4817", False),
        ("x4817", "4817", False),
        ("4817", "4817", True),
        ("a_b c", "b c", False),
        ("é4817", "4817", False),  # a Unicode letter is a word character, as in re's \w
        ("first 12 then 12x then 12", "12", True),
        ("only 12x", "12", False),
        ("a (b) c", "(b)", True),  # what would be pattern syntax is plain text
    ],
)
def test_words_occur_only_between_non_word_characters(text: str, words: str, found: bool) -> None:
    assert occurs_as_words(text, words) is found
    assert (re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text) is not None) is found


def test_the_filler_check_builds_no_pattern_from_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    reply = "zq" * 500 + " copied"
    patterns: list[str] = []
    real_compile = re._compile  # type: ignore[attr-defined]

    def recording(pattern: Any, flags: Any) -> Any:
        patterns.append(str(pattern))
        return real_compile(pattern, flags)

    monkeypatch.setattr(re, "_compile", recording)
    category = deterministic._wrong_answer_category(Oracle(answer="4817"), reply, f"filler {reply} filler")
    assert category == "context_value"
    assert not any("zqzq" in pattern for pattern in patterns)


def _normalise_reference(text: str) -> str:
    """``normalise`` as it was written first (one pattern scan per position, a list of characters)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"(?<=\d)[,_](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s-]|_", " ", text)
    text = re.sub(r"(?<!\w)-|-(?!\w)", " ", text)
    return " ".join(deterministic._NUMBER_WORDS.get(word, word) for word in text.split())


def test_the_fast_normalise_equals_the_reference_on_random_text() -> None:
    rng = random.Random(33)
    alphabet = [*"ab1234-_,. x9-AZ", "é", "\u0301", "ñ", "Å", "\u2028", "ﬁ", "①", "Ⅻ", "’", "one", "twelve"]
    for _ in range(1000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert deterministic.normalise(text) == _normalise_reference(text), text
