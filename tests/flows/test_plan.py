"""Frozen plans: the manifest names every group that decides a run, and a run that deviates from
its plan in any group is refused (or, when allowed, runs with each deviation recorded)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.config import build_config
from rotscope.errors import BadInput
from rotscope.execution.dry_run import freeze_plan
from rotscope.execution.runner import run_experiment
from rotscope.plan.manifest import SHARED_GROUPS, cases_digest, deviations, manifest_digest, read_manifest
from rotscope.report.html import render_report
from rotscope.store import RunStore
from rotscope.tasks import get_task

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")


def _corpus(folder: Path, seed: int = 0) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(3):
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) for _ in range(40))
        (folder / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return folder


def _config(corpus: Path, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "plantest",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["beginning", "end"],
        "limit": 3,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    data.update(fields)
    return data


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return _corpus(tmp_path / "corpus")


@pytest.fixture
def plan(tmp_path: Path, corpus: Path) -> dict[str, Any]:
    freeze_plan(build_config(_config(corpus)), tmp_path / "plan.json")
    return read_manifest(tmp_path / "plan.json")


def test_the_manifest_records_what_the_issue_asks_for(plan: dict[str, Any]) -> None:
    for key in ("model_digest", "tokenizer_digest", "template_digest", "assembler_digest"):
        assert key in plan["subject"]
    assert plan["cases"]["digest"] and plan["filler"]["digest"]
    assert plan["grid"] == {
        "tasks": ["niah"],
        "lengths": [200],
        "positions": ["beginning", "end"],
        "repetitions": 1,
        "limit": 3,
        "controls": True,
        "questions_per_prompt": 1,
        "placement": plan["config"]["placement"],
    }
    assert plan["seeds"] == {"layout": 0, "generation": 0}
    assert plan["decoding"] == {"temperature": 0.0, "max_tokens": 32}
    analysis = plan["analysis"]
    assert analysis["primary_metric"] == "accuracy"
    assert analysis["multiple_comparisons"] == "holm"
    for key in ("interval", "alpha", "margin", "floor", "min_instances", "stopping_rule", "errors"):
        assert key in analysis
    assert plan["planned"]["work_items"] == 3 * 2 + 3  # cases x positions + evidence-absent controls


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"lengths": [240]}, "grid.lengths"),
        ({"depths": ["beginning", "midpoint"]}, "grid.positions"),
        ({"trials": 2}, "grid.repetitions"),
        ({"seed": 3}, "seeds.layout"),
        ({"generation": {"seed": 4}}, "seeds.generation"),
        ({"generation": {"max_tokens": 8}}, "decoding.max_tokens"),
        ({"generation": {"temperature": 0.5}}, "decoding.temperature"),
        ({"gate": {"margin": 0.2}}, "analysis.margin"),
        ({"gate": {"min_instances": 3}}, "analysis.min_instances"),
        ({"model": "fake/lexical-recent"}, "subject.model"),
        ({"system_prompt": "Be brief."}, "subject.system_prompt_digest"),
        ({"length_tolerance": 0.1}, "config.length_tolerance"),
    ],
)
def test_each_group_deviation_is_refused_naming_field_and_values(
    tmp_path: Path, corpus: Path, plan: dict[str, Any], change: dict[str, Any], field: str
) -> None:
    config = build_config(_config(corpus, **change))
    with pytest.raises(BadInput) as raised:
        run_experiment(config, run_dir=tmp_path / "run", frozen_plan=plan)
    message = str(raised.value)
    assert f"at {field}: plan " in message and ", run " in message
    assert manifest_digest(plan) in message
    assert not (tmp_path / "run").exists()


def test_edited_filler_files_deviate_at_the_corpus_digest(
    tmp_path: Path, corpus: Path, plan: dict[str, Any]
) -> None:
    _corpus(corpus, seed=1)  # same files, other text
    found = deviations(plan, _manifest_of(tmp_path, _config(corpus)))
    assert [deviation.field for deviation in found] == ["filler.digest"]


def _manifest_of(tmp_path: Path, data: dict[str, Any]) -> dict[str, Any]:
    freeze_plan(build_config(data), tmp_path / "other-plan.json")
    return read_manifest(tmp_path / "other-plan.json")


def test_a_changed_case_changes_the_cases_digest() -> None:
    cases = list(get_task("niah").cases())[:3]
    changed = [cases[0], cases[1], replace(cases[2], question="What else?")]
    assert cases_digest(cases) != cases_digest(changed)
    assert cases_digest(cases) == cases_digest(list(get_task("niah").cases())[:3])


def test_the_plan_is_reproducible(tmp_path: Path, corpus: Path, plan: dict[str, Any]) -> None:
    assert deviations(plan, _manifest_of(tmp_path, _config(corpus))) == []


def test_allowed_deviations_run_and_are_recorded(tmp_path: Path, corpus: Path, plan: dict[str, Any]) -> None:
    config = build_config(_config(corpus, lengths=[240]))
    run_dir = run_experiment(config, run_dir=tmp_path / "run", frozen_plan=plan, allow_deviation=True)
    summary = load_summary(run_dir)
    assert summary["plan"]["digest"] == manifest_digest(plan)
    fields = [deviation["field"] for deviation in summary["plan"]["deviations"]]
    assert fields[0] == "grid.lengths"
    assert summary["plan"]["deviations"][0]["planned"] == [200]
    assert summary["plan"]["deviations"][0]["actual"] == [240]
    assert "config.lengths" in fields
    html = render_report(run_dir)
    assert "Deviations from the frozen plan" in html and "grid.lengths" in html


def test_a_run_under_its_plan_stores_the_plan_digest_and_its_manifest(
    tmp_path: Path, corpus: Path, plan: dict[str, Any]
) -> None:
    run_dir = run_experiment(build_config(_config(corpus)), run_dir=tmp_path / "run", frozen_plan=plan)
    store = RunStore.open_existing(run_dir)
    meta = store.meta()
    store.close()
    assert meta["plan"] == {"digest": manifest_digest(plan), "deviations": []}
    assert meta["manifest"] == plan
    assert meta["manifest_digest"] == manifest_digest(plan)


def test_shared_groups_exclude_the_subject() -> None:
    assert "subject" not in SHARED_GROUPS and "config" not in SHARED_GROUPS


def test_a_file_that_is_not_a_plan_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(BadInput, match="not a plan"):
        read_manifest(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("{", encoding="utf-8")
    with pytest.raises(BadInput, match="not a plan"):
        read_manifest(tmp_path / "y.json")
    with pytest.raises(BadInput, match="not found"):
        read_manifest(tmp_path / "z.json")


def test_the_plan_counts_the_slices_the_gate_will_judge(tmp_path: Path, corpus: Path) -> None:
    """Evidence-only items are one slice per task at length 0 whatever their unpadded length (not a
    one-instance slice each), and the plan's slices are exactly the gate's on the run it plans."""
    from rotscope.backends import create_backend
    from rotscope.gate.pairing import build_slices, load_run
    from rotscope.plan.manifest import gate_slices
    from rotscope.plan.workitems import build_plan

    config = build_config(_config(corpus, evidence_only=True, lengths=[200, 300]))
    freeze_plan(config, tmp_path / "eo.json")
    planned = read_manifest(tmp_path / "eo.json")["planned"]
    # 2 lengths x (2 positions + the evidence-absent control) + one evidence-only slice
    assert (planned["slices"], planned["instances_per_slice"], planned["clusters"]) == (7, 3, 3)
    backend = create_backend(config)
    try:
        expected = gate_slices(build_plan(config, backend), None)
    finally:
        backend.close()
    run = load_run(run_experiment(config, run_dir=tmp_path / "eo-run"))
    judged, _ = build_slices(run, run)
    assert [(s.task, s.length, s.position, s.instances) for s in judged] == [
        (key[0], key[1], key[2], len(clusters)) for key, clusters in expected.items()
    ]
    assert ("niah", 0, "evidence-only", ()) in expected
