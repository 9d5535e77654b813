"""The example case file on the real bundled model: named positions and an absolute offset at
~300 tokens plus the evidence-only control, every prompt verified and delivered as sent (the
engine's own prompt count equals the ids sent), every row scored with its claim report."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import run_experiment

EXAMPLE = Path(__file__).parents[2] / "examples" / "gate"


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def test_example_cases_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"tasks: [cases]\ncases: {EXAMPLE / 'cases.jsonl'}\n", encoding="utf-8")
    config = load_config(
        experiment,
        {
            "model": "bundled",
            "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
            "limit": 3,
            "lengths": [300],
            "depths": ["beginning", "@40", "end"],
            "controls": False,
            "evidence_only": True,
            "filler": {"kind": "readinglog"},
            "generation": {"temperature": 0.0, "max_tokens": 24, "seed": 0},
            "llamacpp": {"n_threads": 1},
        },
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    rows = _rows(run_dir)
    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["rejected_prompts"] == 0
    assert len(rows) == 3 * 3 + 3
    assert all(row["status"] == "ok" for row in rows), [row["error"] for row in rows]
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in rows)
    assert all(row["claim_report"] is not None for row in rows)
    probes = [row for row in rows if not row["control"]]
    assert all(abs(row["prompt_tokens"] - 300) <= 15 for row in probes)
    assert {row["position"] for row in probes} == {"beginning", "@40", "end"}
    alone = [row for row in rows if row["control"]]
    assert all(row["position"] == "evidence-only" and row["haystack_tokens"] == 0 for row in alone)
    assert all(row["prompt_tokens"] < 150 for row in alone)
    assert {json.loads(row["slices"])["risk"] for row in rows} <= {"high", "low"}
    first_three = {"refund-window", "payroll-signoff", "crane-load"}
    assert {entry["case_id"] for entry in summary["cases"]} == first_three
    assert all(entry["evidence_only"] is not None for entry in summary["cases"])
