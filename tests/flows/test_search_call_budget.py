"""``--max-calls`` holds on a search over session filler with ``filler.static``: each layout is
rendered in the session and in the static filler, two calls, which the search's count of an
instance's calls (depths x trials x controls) missed, so ``--max-calls 40`` made 64."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli_helpers import invoke

EXPERIMENT: dict[str, Any] = {
    "name": "session-search",
    "model": "fake/lexical",
    "tasks": ["niah"],
    "lengths": [256],
    "depths": [0.5, 0.9],
    "limit": 64,
    "controls": False,
    "filler": {"kind": "session", "static": {"kind": "readinglog"}},
    "search": {"definition": "absolute-0.5", "range": [300, 2400], "resolution": 3.0, "cap": 16, "batch": 8},
}


def _calls_made(folder: Path) -> int:
    made = 0
    for store in sorted((folder / "steps").glob("*/run.db")):
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            made += db.execute("SELECT count(*) FROM items WHERE status != 'pending'").fetchone()[0]
    return made


def test_max_calls_holds_with_session_and_static_filler(tmp_path: Path) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(EXPERIMENT), encoding="utf-8")
    result = invoke("run", path, "--search", "--max-calls", "40", "--out", tmp_path / "out")
    assert result.exit_code == 4, result.output  # stopped at its budget, resumable with a larger one
    made = _calls_made(tmp_path / "out")
    record = json.loads((tmp_path / "out" / "search.json").read_text(encoding="utf-8"))
    assert 0 < made <= 40, made
    assert record["calls"] == made
    assert "max_calls" in record["stopped_by"]
