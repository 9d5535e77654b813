"""The reasoning family on the real bundled model: prompts of the asked length with every copy of
the target spanned, replies scored by the final-answer rules, the summary's drop and shares."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment

LENGTH = 512


def test_reasoning_runs_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    config = build_config(
        {
            "name": "reasoning-bundled",
            "model": "bundled",
            "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
            "tasks": ["reasoning"],
            "lengths": [LENGTH],
            "reasoning": {"items": 2, "fillers": ["with_solutions"], "layouts": ["end", "middle_dup"]},
            "generation": {"temperature": 0.0, "max_tokens": 16, "seed": 0},
            "llamacpp": {"n_threads": 1},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute("SELECT * FROM items")]

    assert len(rows) == 4  # 2 items x 2 layouts, no evidence-absent controls
    for row in rows:
        assert row["status"] == "ok" and row["error"] is None
        assert row["filler"] == "with_solutions"
        assert abs(row["prompt_tokens"] - LENGTH) <= 0.05 * LENGTH
        assert row["usage_prompt_tokens"] == row["prompt_tokens"]
        spans = json.loads(row["spans"])
        assert len(spans) == {"end": 1, "middle_dup": 2}[row["position"]]
        assert len({span["text"] for span in spans}) == 1
        assert all(0 <= span["token_start"] < span["token_end"] <= row["prompt_tokens"] for span in spans)
        if row["outcome"] == "incorrect":
            assert row["category"] in {"filler_answer", "filler_number", "wrong_answer", "format"}

    summary = load_summary(run_dir).model_dump()
    assert {cell["layout"] for cell in summary["cells"]} == {"end", "middle_dup"}
    (drop,) = summary["tasks"][0]["reasoning"]["drops"]
    assert (drop["layout"], drop["pairs"], drop["length"]) == ("middle_dup", 2, LENGTH)
    assert len(summary["tasks"][0]["reasoning"]["interference"]) == 2
