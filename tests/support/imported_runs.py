"""Two small run folders made by ``rotscope import`` (no model call): the same 16 questions at three
lengths, each model right at its own rate, so ``compare``, ``show`` and ``report`` have something to
read in a second. The model and task names are the caller's (the escaping battery plants hostile
ones)."""

from __future__ import annotations

import json
import random
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
                    "model": model,
                    "task": task,
                }
                handle.write(json.dumps(row) + "\n")
    result = invoke("import", source, "--out", folder)
    assert result.exit_code == 0, result.output
    return folder
