"""examples/session.yaml, made small, on the real bundled model: instruction adherence and niah in
a generated session and in static filler of equal length, every prompt delivered as verified, each
instruction reply scored by its rule, and the static-vs-session gap in the summary."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.scoring.instruction import check_reply

EXAMPLE = Path(__file__).parents[2] / "examples" / "session.yaml"


def test_session_example_on_the_bundled_model(bundled_path: Path, tmp_path: Path) -> None:
    settings = {
        "model": "bundled",
        "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
        "lengths": [512],
        "depths": [0.9],
        "limit": 2,
        "llamacpp": {"n_threads": 1},
    }
    run_dir = run_experiment(load_config(EXAMPLE, settings), run_dir=tmp_path / "run")
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute("SELECT * FROM items")]
    assert rows and all(row["status"] == "ok" for row in rows)
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in rows)
    assert all(abs(row["prompt_tokens"] - 512) <= 25 for row in rows)
    assert {row["filler"] for row in rows} == {None, "session"}
    for row in rows:
        if row["task"] == "instruction":
            problem = check_reply(row["expected"], row["response"])
            assert row["outcome"] == ("correct" if problem is None else "incorrect")
            assert row["category"] == problem
    summary = load_summary(run_dir).model_dump()
    gaps = {(gap["task"], gap["length"]): gap for gap in summary["filler_gap"]}
    assert set(gaps) >= {("niah", None), ("niah", 512)}
    assert all(gap["pairs"] >= 1 for gap in gaps.values())
