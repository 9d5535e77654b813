"""``placement.separations`` from the command line on a fake backend: a bad value is one line and
exit 2, ``run --dry-run`` counts the axis, and ``show --json`` / ``--markdown`` give accuracy by
separation with the rows' measured distance, and the HTML report its plot and table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import yaml

from tests.support.cli_helpers import assert_bad_input, invoke

BASE = {
    "name": "apart",
    "model": "fake/lexical",
    "tasks": ["join"],
    "lengths": [1024],
    "depths": [0.5],
    "limit": 3,
    "controls": False,
    "filler": {"kind": "readinglog"},
}


def _file(tmp_path: Path, **placement: object) -> Path:
    path = tmp_path / "apart.yaml"
    path.write_text(yaml.safe_dump({**BASE, "placement": placement} if placement else BASE))
    return path


def test_a_bad_separation_is_one_line_and_exit_2(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", _file(tmp_path, separations=[0.5, 1.5]), "--dry-run"), "separations")
    assert_bad_input(invoke("run", _file(tmp_path, separations=[0]), "--dry-run"), "separations")


def test_the_axis_multiplies_the_items_and_show_gives_accuracy_by_separation(tmp_path: Path) -> None:
    plain = invoke("run", _file(tmp_path), "--dry-run")
    assert plain.exit_code == 0, plain.output
    apart = invoke("run", _file(tmp_path, separations=[64, 0.25]), "--dry-run")
    assert apart.exit_code == 0, apart.output
    assert plain.output.split()[0] == "3" and apart.output.split()[0] == "6", (plain.output, apart.output)

    out = tmp_path / "run"
    result = invoke("run", _file(tmp_path, separations=[64, 0.25]), "--out", out)
    assert result.exit_code == 0, result.output
    shown = invoke("show", out, "--json")
    cells = json.loads(shown.output)["separations"]
    pooled = [cell for cell in cells if cell["length"] is None]
    assert [(cell["task"], cell["separation"]) for cell in pooled] == [("join", 64), ("join", 0.25)]
    assert all(cell["n"] == 3 and cell["instances"] == 3 and cell["ci_method"] for cell in pooled)
    assert pooled[0]["asked_tokens"] == 64 and abs(pooled[0]["measured_tokens"] - 64) <= 6
    assert pooled[1]["asked_tokens"] > 64
    with sqlite3.connect(out / "run.db") as db:
        stored = sorted(db.execute("SELECT separation, separation_asked, separation_tokens FROM items"))
    assert [row[0] for row in stored] == [0.25] * 3 + [64] * 3
    assert all(abs(tokens - asked) <= max(1, asked // 10) for _, asked, tokens in stored)
    markdown = invoke("show", out, "--markdown").output
    assert "Accuracy by separation" in markdown and "| join | 64 tokens | all |" in markdown
    report = invoke("report", out)
    assert report.exit_code == 0, report.output
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Accuracy by separation" in html and "0.25 filler" in html


def test_a_run_without_the_axis_has_no_separations_key(tmp_path: Path) -> None:
    out = tmp_path / "plain"
    assert invoke("run", _file(tmp_path), "--out", out).exit_code == 0
    assert "separations" not in json.loads(invoke("show", out, "--json").output)
