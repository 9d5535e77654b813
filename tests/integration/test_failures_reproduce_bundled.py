"""A failure saved by ``rotscope cases RUN --failing`` re-renders its prompt under the real bundled
model's tokenizer and chat template (a BPE vocabulary, where a cut between filler and evidence is
where re-encoding could differ): latent and competitive cases at ~300 tokens in two haystack
variants fail, and their saved lines, run again under another seed and one variant, give every
failing row's prompt digest again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import run_experiment
from tests.support.cli_helpers import invoke


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def _run(tmp_path: Path, name: str, **fields: Any) -> list[dict[str, Any]]:
    experiment = tmp_path / f"{name}.yaml"
    experiment.write_text("name: saved\n", encoding="utf-8")
    settings = {
        "model": "bundled",
        "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
        "lengths": [300],
        "depths": [0.2, 0.8],
        "controls": False,
        "generation": {"temperature": 0.0, "max_tokens": 8, "seed": 0},
        "llamacpp": {"n_threads": 1},
        **fields,
    }
    run_dir = run_experiment(load_config(experiment, settings), run_dir=tmp_path / name)
    rows = _rows(run_dir)
    assert all(row["status"] == "ok" for row in rows), [row["error"] for row in rows]
    return rows


def test_saved_failures_give_their_prompt_digests_again_on_the_bundled_model(
    bundled_path: Path, tmp_path: Path
) -> None:
    first = _run(
        tmp_path,
        "first",
        tasks=["latent", "competitive"],
        limit=2,
        seed=5,
        filler={"kind": "readinglog", "variants": 2},
    )
    failed = {
        (row["case_id"], row["position"] or row["depth"]): row["prompt_digest"]
        for row in first
        if row["outcome"] != "correct"
    }
    assert any(case_id.startswith("latent") for case_id, _ in failed), failed
    saved = tmp_path / "saved.jsonl"
    result = invoke("cases", tmp_path / "first", "--failing", "-o", saved)
    assert result.exit_code == 0 and "not exact" not in result.output, result.output
    lines = [json.loads(text) for text in saved.read_text(encoding="utf-8").splitlines()]
    assert {line["haystack"]["variant"] for line in lines} <= {0, 1}
    again = _run(tmp_path, "again", tasks=["cases"], cases=str(saved), seed=1, filler={"kind": "readinglog"})
    digests = {(row["case_id"], row["position"] or row["depth"]): row["prompt_digest"] for row in again}
    assert {key: digests.get(key) for key in failed} == failed
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in again)
