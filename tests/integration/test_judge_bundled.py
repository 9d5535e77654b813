"""The judge on a real local engine: the bundled model grades undecided replies of a fake model,
so the judge's prompt is rendered and tokenized by a real chat template and sent as token ids."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.scoring.judge import JUDGE_PROMPT_SHA256
from rotscope.types import GenerateRequest


def paraphrase(request: GenerateRequest) -> str:
    return "zzz qqq plover"  # no answer, no trap, no abstention, not in the context


def test_bundled_model_judges_undecided_rows(tmp_path: Path) -> None:
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [200],
            "depths": [0.5],
            "filler": {"kind": "code", "package": "json"},
            "judge": {"model": "bundled", "max_tokens": 4},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("lexical", paraphrase))
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute("SELECT * FROM items")]
    assert len(rows) == 4  # 2 probes + 2 controls, every reply undecided
    for row in rows:
        assert row["judge_model"] == "bundled"
        assert row["judge_prompt_sha256"] == JUDGE_PROMPT_SHA256
        assert row["judge_verdict"] in ("correct", "incorrect", "abstained", "unparsed")
        assert row["judge_response"]  # the engine answered (no error text, no empty reply)
        assert row["status"] == "ok" and row["cost"] == 0.0
    summary = load_summary(run_dir).model_dump()
    assert summary["judge"]["model"] == "bundled"
    assert sum(summary["judge"]["verdicts"].values()) == 4
