"""Run folders written before the package restructure (commit a945638) still open.

tests/fixtures/runs/ holds two runs made with that code: fake/lexical and fake/lexical-recent on
niah and nolima, limit 3, lengths 256 and 512 (48 items each). The expected exit codes and cells
below are what the code of a945638 printed for the same commands on copies of these folders.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotscope.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
RUNS = {"lexical": "v1-lexical", "recent": "v1-lexical-recent"}

# (task, length, depth, n, correct, accuracy) of `rotscope show DIR --json` at a945638.
LEXICAL_CELLS = [
    ("niah", 256, 0.0, 3, 3, 1.0),
    ("niah", 256, 0.5, 3, 3, 1.0),
    ("niah", 256, 1.0, 3, 3, 1.0),
    ("niah", 512, 0.0, 3, 3, 1.0),
    ("niah", 512, 0.5, 3, 3, 1.0),
    ("niah", 512, 1.0, 3, 3, 1.0),
    ("nolima", 256, 0.0, 3, 0, 0.0),
    ("nolima", 256, 0.5, 3, 0, 0.0),
    ("nolima", 256, 1.0, 3, 0, 0.0),
    ("nolima", 512, 0.0, 3, 0, 0.0),
    ("nolima", 512, 0.5, 3, 0, 0.0),
    ("nolima", 512, 1.0, 3, 0, 0.0),
]
# lexical-recent reads only the second half of the context: the needle at the end is all it finds.
RECENT_CELLS = [
    ("niah", 256, 0.0, 3, 0, 0.0),
    ("niah", 256, 0.5, 3, 0, 0.0),
    ("niah", 256, 1.0, 3, 3, 1.0),
    ("niah", 512, 0.0, 3, 0, 0.0),
    ("niah", 512, 0.5, 3, 0, 0.0),
    ("niah", 512, 1.0, 3, 3, 1.0),
    ("nolima", 256, 0.0, 3, 0, 0.0),
    ("nolima", 256, 0.5, 3, 0, 0.0),
    ("nolima", 256, 1.0, 3, 0, 0.0),
    ("nolima", 512, 0.0, 3, 0, 0.0),
    ("nolima", 512, 0.5, 3, 0, 0.0),
    ("nolima", 512, 1.0, 3, 0, 0.0),
]
OLD_CELLS = {"lexical": LEXICAL_CELLS, "recent": RECENT_CELLS}
# At a945638 the gate said INCONCLUSIVE (exit 3), not FAIL: every slice has 3 instances, fewer
# than the default minimum of 10.
OLD_GATE_EXIT = 3
ITEMS = 48


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """Copies of the fixture folders (a run or --resume would migrate run.db; reads do not)."""
    copies = {}
    for key, name in RUNS.items():
        source = FIXTURES / name
        assert sorted(p.name for p in source.iterdir()) == ["config.yaml", "run.db"]
        copies[key] = Path(shutil.copytree(source, tmp_path / key))
    return copies


def item_ids(run_dir: Path) -> set[str]:
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        return {row[0] for row in db.execute("SELECT item_id FROM items")}


@pytest.mark.parametrize("key", sorted(RUNS))
def test_show_json_gives_the_cells_the_old_code_gave(runs: dict[str, Path], key: str) -> None:
    result = CliRunner().invoke(app, ["show", str(runs[key]), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    cells = [
        (c["task"], c["length"], c["depth"], c["n"], c["correct"], c["accuracy"]) for c in summary["cells"]
    ]
    assert cells == OLD_CELLS[key]
    assert summary["items"]["total"] == summary["items"]["done"] == ITEMS
    # Intervals are recomputed and say how: these runs predate haystack variants, so every row is
    # in the one haystack (recovered from the stored config) and the instances are the clusters.
    for found in summary["cells"]:
        assert found["ci_method"] == "adjusted t on instance means (one haystack: conditional on it)"
        assert (found["clusters"], found["cluster_on"]) == (3, "instance")
        assert found["ci_low"] <= found["instance_accuracy"] <= found["ci_high"]
        assert found["ci_high"] - found["ci_low"] > 0.3  # 3 instances: never a point


@pytest.mark.parametrize("key", sorted(RUNS))
def test_report_writes_a_non_empty_html_file(runs: dict[str, Path], key: str, tmp_path: Path) -> None:
    out = tmp_path / f"{key}.html"
    result = CliRunner().invoke(app, ["report", str(runs[key]), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.stat().st_size > 0
    assert out.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize("key", sorted(RUNS))
def test_export_jsonl_gives_one_line_per_row(runs: dict[str, Path], key: str) -> None:
    result = CliRunner().invoke(app, ["export", str(runs[key]), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == ITEMS
    assert {row["item_id"] for row in rows} == item_ids(runs[key])


def test_gate_of_recent_against_lexical_exits_as_the_old_code_did(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    record = tmp_path / "gate.json"
    result = CliRunner().invoke(
        app,
        [
            "gate",
            "--baseline",
            str(runs["lexical"]),
            "--candidate",
            str(runs["recent"]),
            "-o",
            str(record),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == OLD_GATE_EXIT, result.output
    verdict = json.loads(record.read_text(encoding="utf-8"))
    assert verdict["verdict"] == "INCONCLUSIVE" and verdict["exit_code"] == OLD_GATE_EXIT


# (task, definition) -> (value, state) of each task's effective lengths, as the code before issue 31
# (main at 4173bdd) computed them on these folders: the new base rule and the bracket leave the points.
OLD_POINTS = {
    "v1-lexical": {
        ("niah", "nolima-0.85"): (512, "at-least-longest"),
        ("niah", "absolute-0.856"): (512, "at-least-longest"),
        ("nolima", "nolima-0.85"): (None, "no-signal"),
        ("nolima", "absolute-0.856"): (None, "below-shortest"),
    },
    "v1-lexical-recent": {
        ("niah", "nolima-0.85"): (512, "at-least-longest"),
        ("niah", "absolute-0.856"): (None, "below-shortest"),
        ("nolima", "nolima-0.85"): (None, "no-signal"),
        ("nolima", "absolute-0.856"): (None, "below-shortest"),
    },
    "v1-quick-bundled": {
        ("niah", "nolima-0.85"): (1024, "at-least-longest"),
        ("niah", "absolute-0.856"): (1024, "at-least-longest"),
        ("nolima", "nolima-0.85"): (256, "value"),
        ("nolima", "absolute-0.856"): (None, "below-shortest"),
    },
}


@pytest.mark.parametrize("name", sorted(OLD_POINTS))
def test_old_folders_keep_their_point_effective_lengths(name: str, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(FIXTURES / name, tmp_path / name))
    result = CliRunner().invoke(app, ["show", str(copy), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    found = {
        (analysis["task"], definition["definition"]): (definition["value"], definition["state"])
        for analysis in summary["tasks"]
        for definition in analysis["effective_length"]["definitions"]
        if definition["definition"].split("-")[0] in ("nolima", "absolute")  # the two they had
    }
    assert found == OLD_POINTS[name]
    # Each now says which lengths formed its base and carries a bracket beside the point.
    for analysis in summary["tasks"]:
        assert analysis["effective_length"]["base_lengths"] == [256]
        assert all(
            "bracket" in definition
            or "measure" in definition
            or definition["state"] in ("no-signal", "no-data")
            for definition in analysis["effective_length"]["definitions"]
        )


def test_compare_of_the_old_folders_tests_nothing_it_cannot(runs: dict[str, Path]) -> None:
    """Issue 48's compare reads folders without a haystack variant on their rows: each instance is
    its own cluster (said in the test's name where one is tested); 3 instances per length are
    under the 5 a test needs, so every length is "too few pairs", as the old code said, and no
    verdict changed (no note)."""
    result = CliRunner().invoke(app, ["compare", str(runs["lexical"]), str(runs["recent"]), "--json"])
    assert result.exit_code == 0, result.output
    comparison = json.loads(result.stdout)
    assert comparison["comparison_version"] == 2 and comparison["rule_note"] is None
    assert comparison["family"] == (
        "niah: Holm over 0 tests: 1 pair x 2 lengths, 2 with too few pairs; "
        "nolima: Holm over 0 tests: 1 pair x 2 lengths, 2 with too few pairs"
    )
    verdicts = {entry["verdict"] for pair in comparison["pairs"] for entry in pair["lengths"]}
    assert verdicts == {"too few pairs"}
    printed = CliRunner().invoke(app, ["compare", str(runs["lexical"]), str(runs["recent"])])
    assert printed.exit_code == 0, printed.output
    words = " ".join(printed.stdout.split())  # the console wraps the heading
    assert "Holm over 0 tests: 1 pair x 2 lengths, 2 with too few pairs, alpha 0.05" in words
