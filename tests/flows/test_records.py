"""The records a run and a gate write follow their models (``rotscope.records``): the summary of a
fake-backend run as ``show --json`` prints it, and the release records of a PASS and a FAIL as
``rotscope gate`` writes them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.gate.record import GateRecord
from rotscope.records import RECORDS
from rotscope.records.summary import Summary

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline, a same-model candidate and a tail-only candidate of 12 needle cases (8 could not
    FAIL a slice they all lose at Holm's level: benchmarks/results/gate_tests.md)."""
    root = tmp_path_factory.mktemp("records")
    rng = random.Random(0)
    (root / "corpus").mkdir()
    for number in range(12):  # a haystack per case: on 3 shared texts the gate cannot decide (issue 48)
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) for _ in range(40))
        (root / "corpus" / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    experiment = root / "exp.yaml"
    experiment.write_text(
        yaml.safe_dump(
            {
                "name": "records",
                "model": "fake/lexical",
                "tasks": ["niah"],
                "lengths": [200],
                "depths": ["beginning", "end"],
                "limit": 12,
                "filler": {"kind": "text", "glob": str(root / "corpus" / "*.txt")},
                "gate": {"min_instances": 3, "margin": 0.3},
            }
        ),
        encoding="utf-8",
    )
    made = {}
    for name, extra in (("baseline", ()), ("same", ()), ("recent", ("--model", "fake/lexical-recent"))):
        result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(root / name), *extra])
        assert result.exit_code == 0, result.output
        made[name] = root / name
    return made


def _gate(runs: dict[str, Path], candidate: str, out: Path) -> int:
    """``rotscope gate`` of ``candidate`` against the baseline, its record written to ``out``."""
    arguments = ["gate", "--baseline", runs["baseline"], "--candidate", runs[candidate], "-o", out]
    result = CliRunner().invoke(app, [str(argument) for argument in arguments])
    assert result.exit_code in (0, 1, 3), result.output
    return result.exit_code


def test_show_json_of_a_fake_run_follows_the_summary_model(runs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["show", str(runs["baseline"]), "--json"])
    assert result.exit_code == 0, result.output
    summary = RECORDS["summary"].validate_json(result.stdout)
    assert isinstance(summary, Summary)
    assert summary.run == "baseline" and {cell.task for cell in summary.cells} == {"niah"}
    assert summary.items.total == summary.items.done > 0


@pytest.mark.parametrize(("candidate", "verdict", "code"), [("same", "PASS", 0), ("recent", "FAIL", 1)])
def test_the_written_gate_record_follows_the_gate_model(
    runs: dict[str, Path], candidate: str, verdict: str, code: int
) -> None:
    out = runs[candidate].parent / f"gate-{candidate}.json"
    assert _gate(runs, candidate, out) == code
    record = RECORDS["gate"].validate_json(out.read_text(encoding="utf-8"))
    assert isinstance(record, GateRecord) and record.verdict == verdict
    assert (record.rollback is not None) == (verdict == "FAIL")
    # The file holds exactly the dict the gate built: validation changed nothing written.
    assert json.loads(out.read_text(encoding="utf-8"))["slices"] == [
        item.model_dump() for item in record.slices
    ]


def test_a_gate_record_with_a_wrong_type_fails(runs: dict[str, Path]) -> None:
    out = runs["same"].parent / "gate-same.json"
    if not out.is_file():
        _gate(runs, "same", out)
    record = json.loads(out.read_text(encoding="utf-8"))
    RECORDS["gate"].validate(record)
    wrong = {
        "verdict": "MAYBE",
        "exit_code": 2,
        "supported_up_to": {"niah": "200"},
        "analysis": {**record["analysis"], "alpha": "0.05"},
        "surprise": 1,
    }
    for key, value in wrong.items():
        with pytest.raises(ValueError, match=key):
            RECORDS["gate"].validate({**record, key: value})


EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize(
    "example", ["multikey", "join", "competitive", "latent", "multihop", "replay/experiment"]
)
def test_each_familys_summary_follows_the_summary_model(example: str, tmp_path: Path) -> None:
    """The families whose flows do not validate their summary already (the others' flow tests
    check theirs against ``summary.schema.json``), two cases each."""
    out = tmp_path / "run"
    arguments = ["run", str(EXAMPLES / f"{example}.yaml"), "--model", "fake/lexical", "--limit", "2"]
    result = CliRunner().invoke(app, [*arguments, "--out", str(out)])
    assert result.exit_code == 0, result.output
    shown = CliRunner().invoke(app, ["show", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    summary = RECORDS["summary"].validate_json(shown.stdout)
    assert isinstance(summary, Summary) and summary.cells and summary.items.done > 0
