"""``generation.stop``: a run on the fake model whose replies ramble on after their answer keeps the
same item ids and outcomes with ``answer`` as with ``end``, decodes fewer tokens, and records which
it ran with; a run folder from before the key reads as ``end``."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import yaml

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.state.identity import before_stop
from rotscope.execution.workflows.runner import run_experiment
from rotscope.types import GenerateRequest

LEXICAL = lexical_responder()
RAMBLE = " And then the reply goes on for a good many more words than the answer needed."


def _rambling(request: GenerateRequest) -> str:
    return f"{LEXICAL(request).rstrip('.')}.\n{RAMBLE}"


def _run(tmp_path: Path, stop: str) -> dict[str, tuple[str, str, int]]:
    config = build_config(
        {
            "name": "stop",
            "model": "fake/lexical",
            "tasks": ["niah"],
            "lengths": [200, 400],
            "depths": [0.0, 1.0],
            "limit": 3,
            "generation": {"stop": stop},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / stop, backend=FakeBackend("lexical", _rambling))
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["generation"]["stop"] == stop
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        rows = db.execute("SELECT item_id, outcome, response, usage_completion_tokens FROM items").fetchall()
    return {item_id: (outcome, response, tokens) for item_id, outcome, response, tokens in rows}


def test_stopping_at_the_answer_keeps_ids_and_outcomes_and_decodes_less(tmp_path: Path) -> None:
    stopped, whole = _run(tmp_path, "answer"), _run(tmp_path, "end")
    assert set(stopped) == set(whole) and len(stopped) >= 12
    assert {item: row[0] for item, row in stopped.items()} == {item: row[0] for item, row in whole.items()}
    assert {row[0] for row in stopped.values()} >= {"correct"}
    assert all(RAMBLE.strip() in row[1] for row in whole.values())
    assert not any("\n" in row[1] for row in stopped.values())
    saved = sum(row[2] for row in whole.values()) - sum(row[2] for row in stopped.values())
    assert saved >= len(stopped) * len(RAMBLE.split())


def test_a_run_folder_written_before_the_key_reads_as_decoding_to_the_end() -> None:
    old: dict[str, Any] = {"name": "x", "generation": {"temperature": 0.0, "max_tokens": 32, "seed": 0}}
    assert before_stop(old)["generation"]["stop"] == "end"
    assert before_stop({"generation": {"stop": "answer"}})["generation"]["stop"] == "answer"
    assert build_config({"name": "x"}).generation.stop == "answer"
