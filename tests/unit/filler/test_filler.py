"""Filler sources (code directories, text globs, JSONL) and the once-tokenized corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rotscope.config.experiment import FillerConfig
from rotscope.errors import BadInput
from rotscope.filler import Document, documents
from rotscope.filler.corpus import tokenize_corpus
from rotscope.tokenizers.local import FakeTokenizer

CODE_FILES = {
    "alpha.py": "def alpha():\n    return 1\n",
    "beta.py": "BETA = 2\n",
    "pkg/__init__.py": "from .gamma import gamma\n",
    "pkg/gamma.py": "def gamma(x):\n    return x * 3\n",
    "pkg/sub/delta.py": "class Delta:\n    pass\n",
    "pkg/sub/epsilon.py": "EPSILON = 'e'\n",
    "zeta.py": "import os\nprint(os.sep)\n",
    "eta.py": "ETA = [1, 2, 3]\n",
}
SKIPPED_FILES = {
    "tests/test_alpha.py": "def test_alpha():\n    assert True\n",
    "pkg/tests/test_gamma.py": "def test_gamma():\n    assert True\n",
    "pkg/__pycache__/gamma.py": "STALE = True\n",
    "notes.txt": "not python\n",
    "blank.py": "\n\n   \n",
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    return _tree(tmp_path / "project", {**CODE_FILES, **SKIPPED_FILES})


def _code_names(root: Path, seed: int) -> list[str]:
    return [document.name for document in documents(FillerConfig(kind="code", path=str(root)), seed)]


def test_code_filler_yields_every_python_file_once(code_dir: Path) -> None:
    names = _code_names(code_dir, seed=0)
    assert len(names) == len(set(names))
    assert {Path(name).as_posix() for name in names} == set(CODE_FILES)


def test_code_filler_documents_hold_the_file_text(code_dir: Path) -> None:
    found = {
        Path(document.name).as_posix(): document.text
        for document in documents(FillerConfig(kind="code", path=str(code_dir)), 0)
    }
    assert found == CODE_FILES


def test_code_filler_order_is_seeded(code_dir: Path) -> None:
    first = _code_names(code_dir, seed=1)
    assert _code_names(code_dir, seed=1) == first
    assert _code_names(code_dir, seed=2) != first
    assert sorted(_code_names(code_dir, seed=2)) == sorted(first)


def test_code_filler_missing_path(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        list(documents(FillerConfig(kind="code", path=str(tmp_path / "absent")), 0))


def test_code_filler_without_python_files(tmp_path: Path) -> None:
    _tree(tmp_path, {"readme.txt": "hello\n", "tests/test_x.py": "X = 1\n"})
    with pytest.raises(BadInput, match="no Python source files"):
        list(documents(FillerConfig(kind="code", path=str(tmp_path)), 0))


def test_code_filler_unknown_package() -> None:
    with pytest.raises(BadInput, match="no installed package named 'no_such_package_xyz'"):
        list(documents(FillerConfig(kind="code", package="no_such_package_xyz"), 0))


def test_code_filler_installed_package() -> None:
    names = [doc.name for doc in documents(FillerConfig(kind="code", package="json"), 0)]
    assert "__init__.py" in names
    assert all(name.endswith(".py") for name in names)


def test_code_filler_package_and_path_together(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not both"):
        list(documents(FillerConfig(kind="code", package="json", path=str(tmp_path)), 0))


def test_text_filler_glob_skips_blank_files_and_is_seeded(tmp_path: Path) -> None:
    texts = {f"doc{i}.txt": f"line {i} of the corpus\n" for i in range(8)}
    _tree(tmp_path, {**texts, "blank.txt": "  \n\n", "other.md": "not matched\n"})
    config = FillerConfig(kind="text", glob=str(tmp_path / "*.txt"))
    first = list(documents(config, 3))
    assert sorted(Path(d.name).name for d in first) == sorted(texts)
    assert {d.text for d in first} == set(texts.values())
    assert [d.name for d in documents(config, 3)] == [d.name for d in first]
    assert [d.name for d in documents(config, 4)] != [d.name for d in first]


def test_text_filler_glob_matching_nothing(tmp_path: Path) -> None:
    config = FillerConfig(kind="text", glob=str(tmp_path / "none" / "*.txt"))
    with pytest.raises(BadInput, match="matches no files"):
        list(documents(config, 0))


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_text_filler_jsonl_field(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "c.jsonl",
        [json.dumps({"body": "first document", "id": 1}), "", json.dumps({"body": "second document"})],
    )
    config = FillerConfig(kind="text", jsonl=str(path), field="body")
    found = list(documents(config, 0))
    assert sorted(d.text for d in found) == ["first document", "second document"]
    # Names carry the line number in the file (the blank line 2 still counts).
    assert sorted(d.name for d in found) == ["c.jsonl:1", "c.jsonl:3"]


def test_text_filler_jsonl_missing_field_names_the_line(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "c.jsonl",
        [json.dumps({"text": "ok"}), "", json.dumps({"body": "no text field"}), json.dumps({"text": "x"})],
    )
    with pytest.raises(BadInput) as raised:
        list(documents(FillerConfig(kind="text", jsonl=str(path)), 0))
    message = str(raised.value)
    assert str(path) in message
    assert "line 3" in message
    assert "'text'" in message


def test_text_filler_jsonl_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [json.dumps({"text": "ok"}), "{not json"])
    with pytest.raises(BadInput, match=":2: not valid JSON"):
        list(documents(FillerConfig(kind="text", jsonl=str(path)), 0))


def test_text_filler_jsonl_field_not_a_string(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [json.dumps({"text": 42})])
    with pytest.raises(BadInput, match="line 1: field 'text' is not a string"):
        list(documents(FillerConfig(kind="text", jsonl=str(path)), 0))


def test_text_filler_jsonl_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        list(documents(FillerConfig(kind="text", jsonl=str(tmp_path / "absent.jsonl")), 0))


@pytest.mark.parametrize(
    "config",
    [FillerConfig(kind="text"), FillerConfig(kind="text", glob="*.txt", jsonl="c.jsonl")],
)
def test_text_filler_needs_exactly_one_source(config: FillerConfig) -> None:
    with pytest.raises(BadInput, match="exactly one of glob or jsonl"):
        list(documents(config, 0))


def _docs(count: int, words: int = 40, tag: str = "") -> list[Document]:
    return [
        Document(
            name=f"d{d}",
            text="\n".join(
                f"{tag}word{d}x{line} "
                + " ".join(f"w{(d * 7 + line * 3 + k) % 50}" for k in range(words // 4))
                for line in range(4)
            ),
        )
        for d in range(count)
    ]


def test_tokenized_corpus_offsets_match_pieces() -> None:
    tokenizer = FakeTokenizer()
    corpus = tokenize_corpus(_docs(5), tokenizer, 50, allow_repeat=False, origin="test")
    assert corpus.size == len(corpus.ids) == len(corpus.offsets) - 1
    assert corpus.offsets[0] == 0
    assert corpus.offsets[-1] == len(corpus.data)
    for index, token_id in enumerate(corpus.ids):
        piece = tokenizer.piece(int(token_id))
        assert corpus.data[corpus.offsets[index] : corpus.offsets[index + 1]] == piece
    assert tokenizer.decode([int(i) for i in corpus.ids]).encode("utf-8") == corpus.data


def test_tokenized_corpus_line_ends_are_safe_cut_points() -> None:
    tokenizer = FakeTokenizer()
    corpus = tokenize_corpus(_docs(3), tokenizer, 50, allow_repeat=False, origin="test")
    ends = [int(i) for i in corpus.line_ends]
    assert ends[0] == 0 and ends[-1] == corpus.size
    assert ends == sorted(set(ends))
    for index in ends[1:-1]:
        assert tokenizer.piece(int(corpus.ids[index])).startswith(b"\n")
        assert not tokenizer.piece(int(corpus.ids[index - 1])).endswith(b"\n")


def test_tokenized_corpus_digest_tracks_the_text() -> None:
    same_a = tokenize_corpus(_docs(3), FakeTokenizer(), 50, allow_repeat=False, origin="a")
    same_b = tokenize_corpus(_docs(3), FakeTokenizer(), 50, allow_repeat=False, origin="b")
    changed = tokenize_corpus(_docs(3, tag="v2"), FakeTokenizer(), 50, allow_repeat=False, origin="a")
    assert same_a.digest == same_b.digest
    assert changed.digest != same_a.digest


def test_tokenized_corpus_stops_reading_when_long_enough() -> None:
    tokenizer = FakeTokenizer()
    small = tokenize_corpus(_docs(200), tokenizer, 50, allow_repeat=False, origin="test")
    assert small.documents < 200
    assert small.size >= 50


def test_tokenized_corpus_too_short_names_both_counts() -> None:
    with pytest.raises(BadInput, match=r"has \d+ tokens but the longest length needs 100000"):
        tokenize_corpus(_docs(2), FakeTokenizer(), 100_000, allow_repeat=False, origin="tiny")


def test_tokenized_corpus_repeats_when_allowed() -> None:
    corpus = tokenize_corpus(_docs(2), FakeTokenizer(), 5_000, allow_repeat=True, origin="tiny")
    assert corpus.size >= 5_000
    assert corpus.documents == 2


def test_tokenized_corpus_of_nothing_is_empty() -> None:
    with pytest.raises(BadInput, match="empty"):
        tokenize_corpus([], FakeTokenizer(), 10, allow_repeat=True, origin="none")


def test_prefix_end_is_a_line_end_within_budget() -> None:
    corpus = tokenize_corpus(_docs(5), FakeTokenizer(), 50, allow_repeat=False, origin="test")
    for budget in (1, 17, 60, corpus.size):
        end = corpus.prefix_end(budget)
        assert end <= budget
        assert end in set(corpus.line_ends.tolist())
        later = corpus.line_ends[(corpus.line_ends > end) & (corpus.line_ends <= budget)]
        assert later.size == 0


def test_nearest_line_ends_order() -> None:
    corpus = tokenize_corpus(_docs(5), FakeTokenizer(), 50, allow_repeat=False, origin="test")
    target, end = corpus.size / 2, corpus.size
    candidates = corpus.nearest_line_ends(target, end)
    distances = np.abs(np.asarray(candidates) - target)
    assert list(distances) == sorted(distances)
    assert set(candidates) == set(corpus.line_ends.tolist())
