"""A session the bundled model writes itself (``filler.assistant: model``), made as small as proves
it: one niah case at 768 tokens, notes of a few tokens. Its notes are in the prompts sent, their cost
in the summary, and a resume replays the stored session without calling the model and plans the
same work items (a resume refuses any other)."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import load_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.execution.workflows.self_session import SessionWriter

EXAMPLE = Path(__file__).parents[2] / "examples" / "session-self.yaml"
NOTE_TOKENS = 8


def test_the_bundled_model_writes_its_session_and_a_resume_replays_it(
    bundled_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = {
        "model": "bundled",
        "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
        "tasks": ["niah"],
        "lengths": [768],
        "depths": [0.5],
        "limit": 1,
        "filler": {"kind": "session", "assistant": "model", "note_tokens": NOTE_TOKENS, "variants": 1},
    }
    config = load_config(EXAMPLE, settings)
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    generation = load_summary(run_dir).model_dump()["session_generation"]
    assert generation["calls"] >= 1 and generation["sessions"] == 1
    assert 0 < generation["completion_tokens"] <= NOTE_TOKENS * generation["calls"]
    [stored] = [run_dir / name for name in generation["files"]]
    notes = [json.loads(line) for line in stored.read_text(encoding="utf-8").splitlines()]
    notes = [record["content"] for record in notes if "usage" in record]
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT status, prompt_tokens, usage_prompt_tokens FROM items").fetchall()
        sent = [json.loads(zlib.decompress(row[0])) for row in db.execute("SELECT messages FROM prompts")]
    assert rows and all(status == "ok" and used == planned for status, planned, used in rows)
    assert any(message["content"] == notes[0] for messages in sent for message in messages)

    calls: list[object] = []
    monkeypatch.setattr(SessionWriter, "_call", lambda self, *args: calls.append(args))
    run_experiment(config, run_dir=run_dir, resume=True)  # refused unless it plans the same items
    assert calls == []
    assert load_summary(run_dir).model_dump()["session_generation"] == generation
