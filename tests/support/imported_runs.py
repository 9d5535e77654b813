"""Two small run folders made by ``rotscope import`` (no model call): the same 16 questions at three
lengths, each model right at its own rate, so ``compare``, ``show`` and ``report`` have something to
read in a second. The model and task names are the caller's (the escaping battery plants hostile
ones): ``import`` refuses a control character in a name (issue 52), so they are planted in the
folder's store after the import, as a run of another tool or an older rotscope could hold them."""

from __future__ import annotations

import json
import random
import sqlite3
from contextlib import closing
from pathlib import Path

from tests.support.cli_helpers import invoke

LENGTHS = (256, 512, 1024)


def imported_run(folder: Path, model: str, task: str, right: float, seed: int = 0) -> Path:
    """``folder`` made by importing 16 questions × ``LENGTHS`` of ``model`` on ``task``, each right
    with probability ``right`` (falling with length)."""
    rng = random.Random(seed)
    source = folder.with_suffix(".jsonl")
    with source.open("w", encoding="utf-8") as handle:
        for question in range(16):
            for length in LENGTHS:
                correct = rng.random() < right * (1.2 - 0.4 * length / LENGTHS[-1])
                row = {
                    "item_id": f"q{question}",
                    "instance_id": f"q{question}",
                    "length_tokens": length,
                    "depth": 0.5,
                    "correct": int(correct),
                    "model": PLANTED_MODEL,
                    "task": PLANTED_TASK,
                }
                handle.write(json.dumps(row) + "\n")
    result = invoke("import", source, "--out", folder)
    assert result.exit_code == 0, result.output
    _plant(folder / "run.db", {PLANTED_MODEL: model, PLANTED_TASK: task})
    return folder


PLANTED_MODEL, PLANTED_TASK = "planted-model", "planted-task"


def _plant(database: Path, names: dict[str, str]) -> None:
    """Every stored mention of the placeholders (rows and metadata) replaced by the given names."""
    with closing(sqlite3.connect(database)) as db, db:
        for placeholder, name in names.items():
            db.execute("UPDATE items SET model = ? WHERE model = ?", (name, placeholder))
            db.execute("UPDATE items SET task = ? WHERE task = ?", (name, placeholder))
            encoded = json.dumps(name)[1:-1]  # as it stands inside a JSON string
            db.execute("UPDATE meta SET value = replace(value, ?, ?)", (placeholder, encoded))
