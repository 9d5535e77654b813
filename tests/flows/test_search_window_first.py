"""A search whose range passes the model's window is refused before its first call (with
``cmd.context_window: 1024`` and ``range: [256, 8192]`` it ran a step, then stopped at the next,
and every resume stopped the same way)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

import rotscope
from tests.support.cli_helpers import assert_bad_input, case_file, invoke, nonsense_corpus

FAKE_AGENT = Path(__file__).resolve().parents[1] / "fake_agent.py"
SOURCE = Path(rotscope.__file__).resolve().parents[1]


def test_a_range_past_the_window_is_refused_before_any_step(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    calls = tmp_path / "calls"
    script.write_text(
        f'#!/bin/sh\necho call >> "{calls}"\nPYTHONPATH="{SOURCE}" exec "{sys.executable}" "{FAKE_AGENT}"\n'
    )
    script.chmod(0o755)
    data = {
        "name": "search",
        "model": f"cmd/{script}",
        "cmd": {"context_window": 1024},
        "tasks": ["cases"],
        "cases": str(case_file(tmp_path / "cases.jsonl")),
        "depths": [0.1, 0.5, 0.9],
        "lengths": [256],
        "controls": False,
        "filler": {
            "kind": "text",
            "glob": str(nonsense_corpus(tmp_path / "corpus", files=4, lines=300) / "*.txt"),
        },
        "search": {
            "definition": "absolute-0.5",
            "range": [256, 8192],
            "resolution": 3.0,
            "cap": 64,
            "batch": 16,
        },
    }
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    line = assert_bad_input(
        invoke("run", path, "--search", "--out", tmp_path / "out"), "search.range", "1024"
    )
    assert "8192" in line.replace(",", "")
    assert not calls.exists()
    assert not (tmp_path / "out").exists()
