"""Each study file of ``examples/studies/``, planned on the bundled model as shipped (its tokenizer
and chat template: render and verify, no model call), gives the prompts and spans its recorded
result in benchmarks/results/studies.md was measured on: the planning fingerprint of
``benchmarks/studies_fingerprint.py`` over the planned rows equals the one that script printed for
the finished bundled run folder. A change that moves a prompt or a span of a study fails here, and
its result must be rerun and the fingerprint recorded again."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import load_config
from rotscope.execution.state.run_folder import planned_rows
from rotscope.plan.workitems import build_plan

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "examples" / "studies"

# file: (fingerprint, rows) of its finished bundled run folder, as benchmarks/results/studies.md lists
RECORDED: dict[str, tuple[str, int]] = {
    "heatmap.yaml": ("4404035bc3131e05", 108),
    "cre.yaml": ("e2d3619a9b6199e5", 144),
    "latent-join.yaml": ("d2e15f9a8733814b", 180),  # the bundled subject: 20 prompts of nine keys
    "session.yaml": ("323fe017c4e46977", 48),
}


def _fingerprint_function() -> Callable[[Iterable[Mapping[str, Any]]], str]:
    script = ROOT / "benchmarks" / "studies_fingerprint.py"
    spec = importlib.util.spec_from_file_location("studies_fingerprint", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cast(Callable[[Iterable[Mapping[str, Any]]], str], module.fingerprint)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_study_plans_the_recorded_prompts(name: str, bundled_path: Path) -> None:
    config = load_config(STUDIES / name)
    backend = create_backend(config)
    assert backend.describe().get("model_file") == str(bundled_path)  # the shipped file's own model
    plan = build_plan(config, backend)
    assert plan.rejected == []
    rows = [
        row for order, item in enumerate(plan.items) for row in planned_rows(item, order, "plan", "llamacpp")
    ]
    digest, count = RECORDED[name]
    assert len(rows) == count
    assert _fingerprint_function()(rows) == digest
