"""The generated reading log: seeded, four kinds of service documents, rich in names and numbers,
and never containing a guarded string."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest

from rotscope.config.experiment import FillerConfig
from rotscope.filler import Document, documents

FIRST = 300
CONFIG = FillerConfig(kind="readinglog")


def _first(seed: int, avoid: frozenset[str] = frozenset(), count: int = FIRST) -> list[Document]:
    return list(itertools.islice(documents(CONFIG, seed, avoid), count))


def _kind(text: str) -> str:
    first_line = text.splitlines()[0]
    if re.fullmatch(r"# [a-z]+\.yaml, owned by [a-z]+", first_line):
        return "config"
    if re.fullmatch(r"# [A-Z][a-z]+", first_line) and "\n## Configuration\n" in text:
        return "readme"
    if first_line.startswith("Runbook: "):
        return "runbook"
    if re.match(r"Incident note \d+: ", first_line):
        return "incident"
    return "unknown"


def _whole_word(word: str, text: str, flags: int = 0) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, flags) is not None


def test_same_seed_same_documents() -> None:
    assert _first(4, count=100) == _first(4, count=100)


def test_other_seed_other_documents() -> None:
    one, two = _first(4, count=100), _first(5, count=100)
    texts_one, texts_two = [d.text for d in one], [d.text for d in two]
    assert texts_one != texts_two
    # not a shifted copy either: few documents of one seed occur at all in the other
    assert len(set(texts_one) & set(texts_two)) < 5


def test_documents_are_named_in_order() -> None:
    assert [d.name for d in _first(0, count=20)] == [f"reading-log-{n}" for n in range(1, 21)]


def test_all_four_kinds_appear_and_nothing_else() -> None:
    kinds = Counter(_kind(d.text) for d in _first(0))
    assert set(kinds) == {"readme", "runbook", "config", "incident"}, kinds
    # the kind is drawn uniformly: each one is a fair share of the log
    assert all(count >= FIRST // 10 for count in kinds.values()), kinds


def test_kinds_have_their_structure() -> None:
    for document in _first(1, count=100):
        text = document.text
        kind = _kind(text)
        if kind == "runbook":
            assert re.findall(r"^(\d)\. ", text, re.MULTILINE) == ["1", "2", "3", "4"], text
        elif kind == "config":
            assert len(re.findall(r"^  \w+: \w+$", text, re.MULTILINE)) == 4, text
        elif kind == "incident":
            assert "\nRoot cause: " in text and "\nFollow-up: " in text, text
        elif kind == "readme":
            assert len(re.findall(r"^- \w+: \w+$", text, re.MULTILINE)) == 3, text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_avoided_strings_never_appear(seed: int) -> None:
    avoid = frozenset({"Marlow", "719"})
    found = _first(seed, avoid)
    assert len(found) == FIRST
    for document in found:
        for word in avoid:
            assert not _whole_word(word, document.text, re.IGNORECASE), (word, document.text)


def test_avoid_drops_exactly_the_documents_that_contain_a_guarded_string() -> None:
    plain = _first(0, count=FIRST + 100)
    # guard strings that do occur: an invented service name and an incident number
    readme = next(d.text for d in plain if _kind(d.text) == "readme")
    name = readme.splitlines()[0].removeprefix("# ")
    incident = next(d.text for d in plain[10:] if _kind(d.text) == "incident")
    match = re.match(r"Incident note (\d+)", incident)
    assert match is not None
    number = match.group(1)
    avoid = frozenset({name, number, "Marlow"})
    kept = [d.text for d in plain if not any(_whole_word(w, d.text, re.IGNORECASE) for w in avoid)]
    assert len(kept) < len(plain), "the guard strings were chosen to occur"
    filtered = _first(0, avoid, count=len(kept))
    assert [d.text for d in filtered] == kept
    # the survivors are numbered without gaps
    assert [d.name for d in filtered] == [f"reading-log-{n}" for n in range(1, len(kept) + 1)]
    for document in filtered:
        assert not _whole_word(name, document.text, re.IGNORECASE)
        assert not _whole_word(number, document.text)


def test_avoid_is_whole_word_only() -> None:
    # guarding "7" must not drop every document with 17 or 70 in it, only a standalone 7
    plain = _first(2)
    filtered = _first(2, frozenset({"7"}))
    assert all(not _whole_word("7", d.text) for d in filtered)
    assert any(re.search(r"\d7|7\d", d.text) for d in filtered)
    assert any(_whole_word("7", d.text) for d in plain)


def test_plenty_of_numbers_and_names() -> None:
    texts = [d.text for d in _first(0)]
    numbers = [n for text in texts for n in re.findall(r"(?<![\w.])\d+(?![\w.])", text)]
    assert len(numbers) >= 2 * FIRST
    assert len(set(numbers)) >= 100
    # invented proper names: capitalised words outside the generator's fixed vocabulary
    fixed = {"It", "Configuration", "Operations", "Restart", "Incident", "Root", "Follow", "Runbook"}
    fixed |= {"Drain", "Check", "Open", "If", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
    names = {w for text in texts for w in re.findall(r"\b[A-Z][a-z]+\b", text)} - fixed
    assert len(names) >= FIRST
    # names are pronounceable inventions, not dictionary words repeated everywhere
    counts = Counter(w for text in texts for w in re.findall(r"\b[A-Z][a-z]+\b", text) if w in names)
    assert counts.most_common(1)[0][1] <= 10
