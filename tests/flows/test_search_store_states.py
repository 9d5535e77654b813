"""A search's step stores and record: a step whose store creation was cut (an empty ``run.db``,
tables without rows, a store torn under its temporary name) is a step not begun, run again to the
decisions of a search never interrupted, never a finished step of zeros; a length where every
layout is rejected is no score; a finished record is never rewritten by a resume that cannot add
to it."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.execution.state.run_folder import CREATING
from tests.support.cli_helpers import case_file, invoke, nonsense_corpus


def _experiment(folder: Path, **changes: Any) -> Path:
    corpus = nonsense_corpus(folder / "corpus", files=4, lines=300)
    search = {"definition": "absolute-0.5", "range": [300, 2400], "resolution": 3.0, "cap": 64, "batch": 16}
    search.update(changes.pop("search", {}))
    config = {
        "name": "search",
        "model": "fake/curve-1000",
        "tasks": ["cases"],
        "cases": str(case_file(folder / "cases.jsonl")),
        "depths": [0.1, 0.9],
        "lengths": [256],
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        "search": search,
        **changes,
    }
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def record(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "search.json").read_text(encoding="utf-8"))


def rows(step: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(step / "run.db")) as db:
        return db.execute("SELECT item_id, status, outcome, response FROM items ORDER BY item_id").fetchall()


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("search")
    result = invoke("run", _experiment(base), "--search", "--out", base / "S")
    assert result.exit_code == 0, result.output
    assert record(base / "S")["verdict"] == "decided"
    assert len(record(base / "S")["steps"]) >= 2
    return base / "S"


def _empty(step: Path) -> None:
    (step / "run.db").write_bytes(b"")


def _tables_without_rows(step: Path) -> None:
    with closing(sqlite3.connect(step / "run.db")) as db, db:
        db.execute("DELETE FROM items")
        db.execute("DELETE FROM meta")


def _torn_under_its_temporary_name(step: Path) -> None:
    data = (step / "run.db").read_bytes()
    (step / "run.db").unlink()
    (step / CREATING).write_bytes(data[: random.Random(2).randrange(len(data))])


@pytest.mark.parametrize("cut", [_empty, _tables_without_rows, _torn_under_its_temporary_name])
def test_a_step_whose_store_creation_was_cut_runs_again_to_the_same_decisions(
    finished: Path, tmp_path: Path, cut: Any
) -> None:
    copy = tmp_path / "S"
    shutil.copytree(finished, copy)
    (copy / "search.json").unlink()  # killed in that step: no record yet
    name = record(finished)["steps"][1]
    cut(copy / "steps" / name)
    resumed = invoke("run", "--resume", copy)  # was: exit 2 forever, or a finished step of zeros
    assert resumed.exit_code == 0, resumed.output
    assert record(copy)["decisions"] == record(finished)["decisions"]
    assert record(copy)["calls"] == record(finished)["calls"]
    assert rows(copy / "steps" / name) == rows(finished / "steps" / name)


def test_a_resume_with_a_smaller_budget_leaves_a_finished_search_as_it_was(
    finished: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "S"
    shutil.copytree(finished, copy)
    before = {name: (copy / name).read_bytes() for name in ("search.json", "config.yaml")}
    resumed = invoke("run", "--resume", copy, "--max-calls", "50")
    assert resumed.exit_code == 0, resumed.output
    assert "had finished (decided)" in resumed.output
    assert f"effective length {record(finished)['bracket']['passes']:,} tokens" in resumed.output
    assert {name: (copy / name).read_bytes() for name in before} == before


def test_a_lower_budget_on_a_stopped_search_keeps_its_record(tmp_path: Path) -> None:
    config = _experiment(tmp_path)
    stopped = invoke("run", config, "--search", "--out", tmp_path / "P", "--max-calls", "70")
    assert stopped.exit_code == 4, stopped.output
    before = {name: (tmp_path / "P" / name).read_bytes() for name in ("search.json", "config.yaml")}
    assert json.loads(before["search.json"])["decisions"]
    again = invoke("run", "--resume", tmp_path / "P", "--max-calls", "20")
    assert again.exit_code == 4, again.output
    assert "kept as they were" in again.output
    assert {name: (tmp_path / "P" / name).read_bytes() for name in before} == before


def test_a_length_where_every_layout_is_rejected_is_no_score(tmp_path: Path) -> None:
    config = _experiment(
        tmp_path,
        model="fake/curve-300",  # longer lengths fail, so the search goes down to 256
        depths=["@200"],
        search={"range": [256, 1024], "resolution": 2.0},
    )
    result = invoke("run", config, "--search", "--out", tmp_path / "R")
    assert result.exit_code == 2, result.output  # was: exit 0, every instance at 256 scored 0.0
    assert "at 256 tokens every layout" in result.stderr and "rejected" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "R" / "search.json").exists()
