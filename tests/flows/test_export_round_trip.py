"""``export`` then ``import`` (issue 51): a run exported as CSV or JSON Lines imports back to the
same cells (accuracy, interval, n) and the same paired gaps, clustered by the same rule (three
haystack variants shared by the cases), with no question or reply text carried across."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.support.cli_helpers import invoke, nonsense_corpus
from tests.support.fault_battery import assert_text_absent


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("round-trip")
    config = {
        "name": "trip",
        "model": "fake/curve-500",
        "tasks": ["niah"],
        "lengths": [200, 400, 800],
        "depths": ["beginning", "end"],
        "limit": 12,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt"), "variants": 3},
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert invoke("run", root / "exp.yaml", "--out", root / "run").exit_code == 0
    shown = invoke("show", root / "run", "--json")
    return {"root": root, "summary": json.loads(shown.stdout)}


def _cells(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("task", "length", "position", "n", "accuracy", "ci_low", "ci_high")
    return sorted(tuple(cell.get(key) for key in keys) for cell in summary["cells"])


def _gaps(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    keys = ("length", "pairs", "gap", "ci_low", "ci_high")
    return [
        tuple(entry.get(key) for key in keys) for task in summary["tasks"] for entry in task["degradation"]
    ]


@pytest.mark.parametrize("format", ["csv", "jsonl"])
def test_an_exported_run_imports_to_the_same_cells_and_gaps(native: dict[str, Any], format: str) -> None:
    root = native["root"]
    exported = root / f"rows.{format}"
    assert invoke("export", root / "run", "--format", format, "-o", exported).exit_code == 0
    made = invoke("import", exported, "--out", root / f"back-{format}")
    assert made.exit_code == 0, made.output
    back = json.loads(invoke("show", root / f"back-{format}", "--json").stdout)
    original = native["summary"]
    assert back["imported"]["format"] == format
    assert _cells(back) == _cells(original)
    assert _gaps(back) == _gaps(original)
    assert _gaps(original)  # the run has gaps to compare
    effective = [task["effective_length"]["value"] for task in back["tasks"]]
    assert effective == [task["effective_length"]["value"] for task in original["tasks"]]
    with open(exported, encoding="utf-8") as stream:
        text = stream.read()
    question = json.loads(invoke("export", root / "run", "--format", "jsonl").stdout.splitlines()[0])[
        "question"
    ]
    assert question in text  # the export holds the question ...
    assert_text_absent(root / f"back-{format}" / "run.db", question)  # ... the import does not
