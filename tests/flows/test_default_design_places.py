"""Issue 48: the default design can place a length. A model right on every item, in an experiment
file that leaves ``filler.variants`` at its default (one haystack per case), gets a bracket whose
lower end is the longest length; under the old default of 3 shared haystacks the same model read
"the base to beyond the longest", and ``run --dry-run`` says so before the first call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli_helpers import invoke

EXPERIMENT: dict[str, Any] = {
    "model": "fake/lexical",  # a saturated NIAH: it answers every case right at these lengths
    "tasks": ["niah"],
    "lengths": [256, 512, 1024],
    "depths": ["midpoint"],
    "limit": 16,
    "controls": False,
    "filler": {"kind": "readinglog"},
}


def _relative(tmp_path: Path, name: str, **filler: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**EXPERIMENT, "filler": {**EXPERIMENT["filler"], **filler}}), "utf-8")
    assert invoke("run", path, "--out", tmp_path / name).exit_code == 0
    shown = invoke("show", tmp_path / name, "--json")
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    definitions = summary["tasks"][0]["effective_length"]["definitions"]
    return next(d for d in definitions if d["definition"] == "nolima-0.85"), summary["cells"]


def test_a_model_right_on_every_item_reaches_the_longest_length_at_the_default(tmp_path: Path) -> None:
    relative, cells = _relative(tmp_path, "default")
    assert all(cell["accuracy"] == 1.0 for cell in cells)  # the premise: right on every item
    bracket = relative["bracket"]
    assert (bracket["state"], bracket["low"]["length"]) == ("at-least-longest", 1024)
    assert "sign-flip on 16 clusters" in bracket["method"]


def test_three_shared_haystacks_cannot_place_it_and_the_dry_run_says_so(tmp_path: Path) -> None:
    relative, cells = _relative(tmp_path, "three", variants=3)
    assert all(cell["accuracy"] == 1.0 for cell in cells)
    assert (relative["bracket"]["low"]["length"], relative["bracket"]["high"]["length"]) == (256, None)
    path = tmp_path / "three.yaml"
    dry = " ".join(invoke("run", path, "--dry-run").output.split())
    assert "niah: at this size (16 cases, clustered on the 3 haystack variants they share" in dry
    assert "can place a cliff of 0.85× only if the model loses (nearly) every item past the cliff" in dry
    assert "34 cases per task could place a model right on every item" in dry
    planned = " ".join(invoke("plan", path, "-o", tmp_path / "plan.json").output.split())
    assert "the bracket can place a cliff of 0.85× only if the model loses" in planned
    default = tmp_path / "default.yaml"
    default.write_text(yaml.safe_dump(EXPERIMENT), "utf-8")
    assert "at this size" not in invoke("run", default, "--dry-run").output
