"""``rotscope run … --inject FAULT`` end to end: every fault runs on niah with a scripted model and
its rows say what it did; on the shipped ``examples/gate/`` (scripted models, ``scripted.yaml``) a
candidate whose prompts lost their head FAILs, and one whose template adds a safety passage is gated
with the layouts it displaces counted and named, not refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.prompt.faults import FAULTS
from rotscope.store import RunStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gate"


def _invoke(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(arg) for arg in args])


def _rows(run_dir: Path) -> list[dict[str, object]]:
    with RunStore.read(run_dir) as store:
        return [dict(row) for row in store.rows()]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_runs_on_niah_and_its_rows_record_it(tmp_path: Path, fault: str) -> None:
    out = tmp_path / "run"
    result = _invoke(
        "run", "--model", "fake/lexical", "--task", "niah", "--lengths", "300,600",
        "--depths", "beginning,end", "--limit", "3", "--inject", fault, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [row for row in _rows(out) if not row["control"]]
    assert rows and all(row["fault"] == fault for row in rows)
    lost = {(row["position"], row["length_target"]): json.loads(str(row["evidence_lost"])) for row in rows}
    if fault == "trim-head":
        assert lost[("beginning", 300)] == ["needle"] and lost[("end", 300)] == []
        assert all(r["outcome"] != "correct" for r in rows if r["position"] == "beginning")
    elif fault == "trim-tail":
        assert lost[("end", 600)] == ["needle"] and lost[("beginning", 600)] == []
    else:
        assert all(not found for found in lost.values())
    if fault in ("add-passage", "smaller-window"):  # no room at 300 / no window for 600
        assert {row["length_target"] for row in rows} == {600 if fault == "add-passage" else 300}
        assert fault in (out / "rejections.jsonl").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inject-gate")
    for name in ("cases.jsonl", "scripted.yaml"):
        shutil.copy(EXAMPLE / name, root / name)
    assert _invoke("plan", root / "scripted.yaml", "-o", root / "plan.json").exit_code == 0
    result = _invoke("run", root / "scripted.yaml", "--plan", root / "plan.json", "--out", root / "base")
    assert result.exit_code == 0, result.output
    return root


def _gate_with(root: Path, fault: str) -> tuple[Result, dict[str, object]]:
    result = _invoke(
        "run", root / "scripted.yaml", "--plan", root / "plan.json", "--allow-deviation",
        "--inject", fault, "--out", root / fault,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = root / f"{fault}.json"
    gate = _invoke(
        "gate", "--baseline", root / "base", "--candidate", root / fault, "--plan", root / "plan.json",
        "--output", record,
    )  # fmt: skip
    return gate, json.loads(record.read_text(encoding="utf-8"))


def test_a_trimmed_head_fails_the_gate_at_the_beginning(gated: Path) -> None:
    gate, record = _gate_with(gated, "trim-head")
    assert gate.exit_code == 1, gate.output
    assert record["verdict"] == "FAIL" and "unplaced" not in record
    failing = {(s["length"], s["position"]) for s in record["slices"] if s["verdict"] == "FAIL"}  # type: ignore[union-attr]
    assert failing == {(250, "beginning"), (500, "beginning")}


def test_an_added_passage_names_the_layouts_it_displaces(gated: Path) -> None:
    gate, record = _gate_with(gated, "add-passage")
    unplaced = record["unplaced"]
    assert isinstance(unplaced, dict) and unplaced["count"] == len(unplaced["layouts"]) > 0
    assert {layout["length"] for layout in unplaced["layouts"]} == {250}
    assert all(layout["unplaced_in"] == "candidate" for layout in unplaced["layouts"])
    if record["forbidden"]:  # the scripted model states a forbidden claim: FAIL on that line first
        assert gate.exit_code == 1 and "the tests alone: INCONCLUSIVE" in record["reasons"]  # type: ignore[operator]
    else:
        assert gate.exit_code == 3 and "unplaced layouts" in record["decided_by"]  # type: ignore[operator]
    # a length the candidate could not place is no supported length, nor any longer one
    support = record["support"]["cases"]  # type: ignore[index]
    assert support["supported_up_to"] is None and "could not place" in support["sentence"]
    assert f"{unplaced['count']} layouts could not be placed in the candidate" in gate.output
    assert {s["length"] for s in record["slices"]} == {500}  # type: ignore[union-attr]
