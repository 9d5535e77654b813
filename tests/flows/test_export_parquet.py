"""Parquet export: one row per work item, the same items as the CSV export, and bad input refused."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.export import export_rows
from rotscope.store import ITEM_COLUMNS
from rotscope.types import GenerateRequest

pq = pytest.importorskip("pyarrow.parquet")


def _config(root: Path, **fields: Any) -> ExperimentConfig:
    corpus = root / "corpus"
    corpus.mkdir(exist_ok=True)
    for number in range(2):
        text = "".join(f"valve {line} checked.\n" for line in range(number * 60, number * 60 + 60))
        (corpus / f"doc{number}.txt").write_text(text, encoding="utf-8")
    data: dict[str, Any] = {
        "name": "export",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": [0.0, 1.0],
        "limit": 2,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export")
    return run_experiment(_config(root), run_dir=root / "run")


# 1 task x 1 length x 2 depths x 2 cases = 4 probes, plus 1 control per case per length = 2.
ITEMS = 6


def _csv_rows(run_dir: Path, items: int = ITEMS) -> list[dict[str, str]]:
    buffer = io.StringIO()
    assert export_rows(run_dir, "csv", None, buffer) == items
    return list(csv.DictReader(io.StringIO(buffer.getvalue())))


def test_parquet_has_one_row_per_item_like_csv(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "items.parquet"
    assert export_rows(run_dir, "parquet", target, sys.stdout) == ITEMS
    table = pq.read_table(target)
    assert table.num_rows == ITEMS
    assert set(table.column_names) == set(ITEM_COLUMNS)

    parquet_rows = table.to_pylist()
    csv_rows = _csv_rows(run_dir)
    parquet_ids = [row["item_id"] for row in parquet_rows]
    assert len(set(parquet_ids)) == ITEMS
    assert sorted(parquet_ids) == sorted(row["item_id"] for row in csv_rows)

    # The same values per item in both exports (CSV holds text).
    by_id = {row["item_id"]: row for row in csv_rows}
    for row in parquet_rows:
        other = by_id[row["item_id"]]
        for column in ("task", "case_id", "instance_id", "status", "outcome", "response"):
            assert row[column] == other[column]
        assert row["length_target"] == int(other["length_target"]) == 200
        assert row["depth"] == pytest.approx(float(other["depth"]))
    assert sum(row["control"] for row in parquet_rows) == 2


def test_parquet_does_not_print(run_dir: Path, tmp_path: Path) -> None:
    stdout = io.StringIO()
    export_rows(run_dir, "parquet", tmp_path / "items.parquet", stdout)
    assert stdout.getvalue() == ""


def test_parquet_without_output_path_is_bad_input(run_dir: Path) -> None:
    stdout = io.StringIO()
    with pytest.raises(BadInput, match="parquet"):
        export_rows(run_dir, "parquet", None, stdout)
    assert stdout.getvalue() == ""  # parquet is binary: never written to stdout


def test_parquet_of_a_folder_without_a_run_keeps_the_output(tmp_path: Path) -> None:
    target = tmp_path / "items.parquet"
    target.write_bytes(b"earlier export")
    with pytest.raises(BadInput, match=r"no run\.db"):
        export_rows(tmp_path / "missing", "parquet", target, sys.stdout)
    assert target.read_bytes() == b"earlier export"


def test_parquet_into_a_missing_folder_is_bad_input(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot write"):
        export_rows(run_dir, "parquet", tmp_path / "no" / "such" / "items.parquet", sys.stdout)


def test_parquet_keeps_error_rows(tmp_path: Path) -> None:
    lexical = lexical_responder()

    def second_trial_fails(request: GenerateRequest) -> str:
        if request.params.seed == 1:
            raise RuntimeError("engine fell over")
        return lexical(request)

    config = _config(tmp_path, trials=2, controls=False)
    run = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("x", second_trial_fails))
    target = tmp_path / "items.parquet"
    # 2 cases x 2 depths x 2 trials = 8 items; trial 1 of each (4) is an error.
    assert export_rows(run, "parquet", target, sys.stdout) == 8
    rows = pq.read_table(target).to_pylist()
    assert len(rows) == 8
    errors = [row for row in rows if row["status"] == "error"]
    assert len(errors) == 4
    assert all(row["trial"] == 1 and "engine fell over" in row["error"] for row in errors)
    assert all(row["error"] is None for row in rows if row["status"] == "ok")
    assert sorted(row["item_id"] for row in rows) == sorted(row["item_id"] for row in _csv_rows(run, 8))
