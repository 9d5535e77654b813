"""The window a release may claim (``gate.supported_lengths.supported_up_to``), read from the
record ``compare`` makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rotscope.gate.pairing import RunData
from rotscope.gate.record import GateRecord
from rotscope.gate.verdict import compare


def _row(task: str, case: str, length: int, position: str, correct: bool) -> dict[str, Any]:
    return {
        "task": task, "case_id": case, "instance_id": case, "length_target": length, "position": position,
        "depth": 0.5, "trial": 0, "control": 0, "question": "q", "expected": "a", "seed": 0,
        "spans": "[]", "prompt_tokens": length, "status": "ok",
        "outcome": "correct" if correct else "incorrect",
    }  # fmt: skip


def _run(rows: list[dict[str, Any]], name: str, gate: dict[str, Any]) -> RunData:
    meta = {"run_id": name, "config": {"seed": 0, "generation": {"seed": 0}, "gate": gate}}
    return RunData(Path(name), meta, rows)


def _window(outcome: Any) -> GateRecord:
    rows = {
        role: [
            _row("niah", f"case-{case}", length, position, outcome(role, length, position, case))
            for length in (1024, 2048, 4096)
            for position in ("beginning", "midpoint", "end")
            for case in range(60)
        ]
        for role in ("baseline", "candidate")
    }
    return compare(
        _run(rows["baseline"], "b", {"margin": 0.1}), _run(rows["candidate"], "c", {"margin": 0.1})
    )


def test_the_supported_window_ends_before_the_first_length_that_fails() -> None:
    """The candidate loses the midpoint from 2,048 tokens on: it may claim 1,024 tokens."""
    record = _window(
        lambda role, length, position, case: role == "baseline" or length < 2048 or position != "midpoint"
    )
    assert record.supported_up_to == {"niah": 1024}
    assert record.support["niah"].sentence == "supported up to 1,024 tokens; 2,048 fails at the midpoint"
    assert record.verdict == "FAIL"
    every = _window(lambda role, length, position, case: case % 10 != 0)
    assert every.supported_up_to == {"niah": 4096}
    assert every.support["niah"].sentence == "supported up to 4,096 tokens (the longest tested)"
    assert json.dumps(every.model_dump(mode="json"))  # the record stays JSON
