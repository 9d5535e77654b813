"""``benchmarks/studies_fingerprint.py`` reads from a run folder the digest that planning the same
experiment again gives (the rows a prompt of two questions writes included), before and after the
run's calls; a moved span changes it; a folder that is not a run is one line and exit 2."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.state.run_folder import planned_rows
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.workitems import build_plan

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "studies_fingerprint", ROOT / "benchmarks" / "studies_fingerprint.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(tmp_path: Path) -> ExperimentConfig:
    corpus = tmp_path / "log.txt"
    corpus.write_text("\n".join(f"pump {i % 13} inspected." for i in range(3000)), encoding="utf-8")
    return build_config(
        {
            "model": "fake/lexical",
            "tasks": ["niah"],
            "questions_per_prompt": 2,
            "lengths": [400],
            "depths": [0.5],
            "limit": 4,
            "filler": {"kind": "text", "glob": str(corpus)},
        }
    )


def test_folder_digest_is_the_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    config = _config(tmp_path)
    plan = build_plan(config, create_backend(config))
    rows = [row for order, item in enumerate(plan.items) for row in planned_rows(item, order, "x", "fake")]
    spanned = next(row for row in rows if json.loads(row["spans"]))
    planned = script.fingerprint(rows)
    assert script.fingerprint(reversed(rows)) == planned  # in item-id order, whatever the plan order

    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    digest, count, unfinished, assembler = script.folder_fingerprint(run_dir)
    assert (digest, count, unfinished) == (planned, len(rows), 0)
    assert assembler is not None

    spans = json.loads(spanned["spans"])
    spans[0]["token_start"] += 1
    moved = [{**row, "spans": json.dumps(spans)} if row is spanned else row for row in rows]
    assert script.fingerprint(moved) != planned

    assert script.main([str(run_dir)]) == 0
    assert capsys.readouterr().out.startswith(f"{planned}  rows={len(rows)}  unfinished_calls=0")
    assert script.main([str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
