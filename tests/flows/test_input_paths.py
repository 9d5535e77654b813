"""Paths in an experiment file resolve against the file, are stored resolved in the run folder, and a
resumed run refuses a corpus other than the one its rows were made from; filler.encoding."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from rotscope.backends.remote_options import RemoteOptions
from rotscope.config.experiment import load_config
from rotscope.filler import documents
from rotscope.tasks.reasoning.options import ReasoningConfig
from tests.support.cli_helpers import invoke, nonsense_corpus


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _rows(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "run.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM items").fetchone()[0])


def _bad_input_line(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rotscope: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


EXPERIMENT: dict[str, Any] = {
    "name": "paths",
    "model": "fake/lexical",
    "tasks": ["niah"],
    "lengths": [200, 300],
    "depths": [0.0, 1.0],
    "limit": 2,
    "filler": {"kind": "text", "glob": "corpus/*.txt"},
}


def test_every_path_resolves_against_the_experiment_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "exp"
    data = {
        "model": "models/m.gguf",
        "cases": "cases.jsonl",
        "out": "runs/one",
        "filler": {"kind": "text", "glob": "corpus/**/*.md", "jsonl": "docs.jsonl", "path": "../code"},
        "reasoning": {"path": "items.jsonl"},
        "cache": {"path": "~/cache.sqlite"},
        "remote": {"tokenizer": "tok/tokenizer.json"},
        "judge": {"model": "openai/j", "remote": {"tokenizer": "tiktoken:o200k_base"}},
    }
    path = _write(folder / "text.yaml", data)
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("exp/text.yaml"))
    base = folder.resolve()
    assert config.model == str(base / "models" / "m.gguf")
    assert config.cases == str(base / "cases.jsonl")
    assert config.out == str(base / "runs" / "one")
    assert config.filler.glob == str(base / "corpus" / "**" / "*.md")
    assert config.filler.jsonl == str(base / "docs.jsonl")
    assert config.filler.path == str(tmp_path.resolve() / "code")
    assert config.section(ReasoningConfig).path == str(base / "items.jsonl")
    assert config.cache.path == str(Path("~/cache.sqlite").expanduser())
    assert config.section(RemoteOptions).tokenizer == str(base / "tok" / "tokenizer.json")
    assert config.judge is not None and config.judge.remote.tokenizer == "tiktoken:o200k_base"
    assert load_config(path).model_dump() == config.model_dump()  # the same wherever it is read from


def test_llamacpp_model_path_and_command_line_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "exp" / "e.yaml", {"model": "llamacpp/m.gguf"})
    monkeypatch.chdir(tmp_path)
    assert load_config(path).model == f"llamacpp/{(tmp_path / 'exp' / 'm.gguf').resolve()}"
    flagged = load_config(path, {"model": "here.gguf", "out": "runs/x"})  # flags: relative to the cwd
    assert flagged.model == str(tmp_path.resolve() / "here.gguf")
    assert flagged.out == str(tmp_path.resolve() / "runs" / "x")
    assert load_config(path, {"model": "openai/gpt-3.5-turbo"}).model == "openai/gpt-3.5-turbo"


def test_hf_model_path_resolves_against_the_experiment_file_but_hf_bundled_stays(tmp_path: Path) -> None:
    path = _write(tmp_path / "exp" / "e.yaml", {"model": "hf/models/tiny"})
    assert load_config(path).model == f"hf/{(tmp_path / 'exp' / 'models' / 'tiny').resolve()}"
    assert load_config(_write(tmp_path / "b.yaml", {"model": "hf/bundled"})).model == "hf/bundled"


def test_run_from_the_parent_folder_and_resume_from_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nonsense_corpus(tmp_path / "exp" / "corpus")
    _write(tmp_path / "exp" / "text.yaml", EXPERIMENT)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "exp/text.yaml", "--out", "run")
    assert result.exit_code == 0, result.output
    stored = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text(encoding="utf-8"))
    assert stored["filler"]["glob"] == str((tmp_path / "exp" / "corpus" / "*.txt").resolve())
    rows = _rows(tmp_path / "run")
    # a corpus of the same relative name where the resume starts must not be read
    nonsense_corpus(tmp_path / "elsewhere" / "corpus", seed=9)
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = invoke("run", "--resume", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert _rows(tmp_path / "run") == rows


def test_resume_refuses_a_corpus_that_changed(tmp_path: Path) -> None:
    corpus = nonsense_corpus(tmp_path / "corpus")
    experiment = _write(tmp_path / "exp.yaml", EXPERIMENT)
    result = invoke("run", experiment, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    rows = _rows(tmp_path / "run")
    with sqlite3.connect(tmp_path / "run" / "run.db") as db:
        (stored,) = db.execute("SELECT value FROM meta WHERE key = 'corpus'").fetchone()
    nonsense_corpus(corpus, seed=5)  # the same files, other words
    line = _bad_input_line(invoke("run", "--resume", tmp_path / "run"))
    assert "filler text:" in line and str(corpus) in line
    digests = [word.rstrip(",;") for word in line.split() if len(word.rstrip(",;")) == 16]
    assert len(set(digests)) == 2 and yaml.safe_load(stored)["digest"] in digests
    assert _rows(tmp_path / "run") == rows
    with sqlite3.connect(tmp_path / "run" / "run.db") as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'corpus'").fetchone()[0] == stored


def test_resume_of_an_old_folder_with_relative_paths_reads_them_from_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders written before paths were stored resolved: the current folder, as before, and
    a corpus that is not the run's is refused."""
    nonsense_corpus(tmp_path / "a" / "corpus")
    monkeypatch.chdir(tmp_path / "a")
    assert (
        invoke("run", _write(tmp_path / "a" / "e.yaml", EXPERIMENT), "--out", tmp_path / "run").exit_code == 0
    )
    config = tmp_path / "run" / "config.yaml"
    stored = yaml.safe_load(config.read_text(encoding="utf-8"))
    stored["filler"]["glob"] = "corpus/*.txt"
    config.write_text(yaml.safe_dump(stored), encoding="utf-8")
    nonsense_corpus(tmp_path / "b" / "corpus", seed=3)
    monkeypatch.chdir(tmp_path / "b")
    refused = _bad_input_line(invoke("run", "--resume", tmp_path / "run"))
    assert "filler" in refused  # the identity (filler.glob) or the corpus digest names it
    monkeypatch.chdir(tmp_path / "a")
    assert invoke("run", "--resume", tmp_path / "run").exit_code == 0
    stored = yaml.safe_load(config.read_text(encoding="utf-8"))  # written back resolved
    assert stored["filler"]["glob"] == str((tmp_path / "a" / "corpus" / "*.txt").resolve())


def test_filler_encoding_reads_latin1_text(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_bytes("Café crème, à la carte.\n".encode("latin-1"))
    path = _write(
        tmp_path / "e.yaml", {"filler": {"kind": "text", "glob": "corpus/*.txt", "encoding": "latin-1"}}
    )
    (document,) = documents(load_config(path).filler, 0)
    assert document.text == "Café crème, à la carte.\n"
