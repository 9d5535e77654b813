"""Frozen plans: the manifest names every group that decides a run, and a run that deviates from
its plan in any group is refused (or, when allowed, runs with each deviation recorded)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.dry_run import freeze_plan
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.digests import cases_digest
from rotscope.plan.manifest import SHARED_GROUPS, deviations, manifest_digest, read_manifest
from rotscope.report.html import render_report
from rotscope.store import RunStore
from rotscope.tasks import get_task
from tests.support.cli_helpers import assert_bad_input, count_fake_calls, invoke

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
    summary = load_summary(run_dir).model_dump()
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
    from rotscope.plan.slices import gate_slices
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


OLD = Path(__file__).resolve().parents[1] / "fixtures" / "plans" / "before-pooled-tests"
"""A plan frozen by rotscope before the gate's pooled tests (commit 4173bdd) from the experiment
beside it: its gate interval is the per-slice cluster bootstrap and its ``planned`` group has no
``clusters``; its ``subject`` holds that version's assembler digest."""


def _experiment(tmp_path: Path, **changes: Any) -> Path:
    data = yaml.safe_load((OLD / "experiment.yaml").read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def old_plan_today(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """Today's manifest of the old experiment (planned once in this module) and the old plan with
    today's ``subject`` group: the assembler digest fingerprints the code that renders prompts,
    which has changed since (every commit to a prompt-shaping module changes it), so only the
    protocol, analysis, planned and config groups are the old version's own. The tests read both and
    never write them."""
    folder = tmp_path_factory.mktemp("old-plan")
    assert invoke("plan", OLD / "experiment.yaml", "-o", folder / "today.json").exit_code == 0
    today = read_manifest(folder / "today.json")
    old = read_manifest(OLD / "plan.json")
    path = folder / "old-plan.json"
    path.write_text(json.dumps({**old, "subject": today["subject"]}, indent=2), encoding="utf-8")
    return today, path


def test_the_old_plan_has_the_shape_an_earlier_version_wrote() -> None:
    old = read_manifest(OLD / "plan.json")
    assert old["analysis"]["interval"] == old["config"]["gate"]["interval"] == "cluster-bootstrap-percentile"
    assert set(old["planned"]) == {"work_items", "rejected_prompts", "slices", "instances_per_slice"}


def test_an_old_plan_deviates_only_in_the_code_under_test(tmp_path: Path) -> None:
    """Read as today's code reads it, the old plan differs from today's only in the assembler
    digest (the prompt-shaping code did change); its interval and its missing clusters count, which
    a plain comparison reports, are no deviation."""
    # the old default of filler.variants (3) written out: issue 48 made one per case the default
    old_default = _experiment(tmp_path, filler={"kind": "readinglog", "variants": 3})
    assert invoke("plan", old_default, "-o", tmp_path / "today.json").exit_code == 0
    old, today = read_manifest(OLD / "plan.json"), read_manifest(tmp_path / "today.json")
    assert [found.field for found in deviations(old, today)] == ["subject.assembler_digest"]
    # what a plain comparison reported: the interval (in the analysis and the config's gate section)
    # and the clusters count today's version adds
    assert old["analysis"]["interval"] != today["analysis"]["interval"] == today["config"]["gate"]["interval"]
    assert "clusters" in today["planned"] and "clusters" not in old["planned"]


def test_the_variants_default_is_part_of_a_plan_so_an_old_plan_keeps_its_three(
    tmp_path: Path, old_plan_today: tuple[dict[str, Any], Path]
) -> None:
    """Planned today without a plan, the old experiment reads one haystack per case (issue 48), and
    its manifest says so; under the old plan the same file keeps the 3 variants it was frozen with."""
    (today, plan), old = old_plan_today, read_manifest(OLD / "plan.json")
    assert old["config"]["filler"]["variants"] == 3 and today["config"]["filler"]["variants"] is None
    assert "config.filler.variants" in [found.field for found in deviations(old, today)]
    result = invoke("run", OLD / "experiment.yaml", "--plan", plan, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    with RunStore.read(tmp_path / "run") as store:
        assert store.meta()["corpus"]["variants"] == 3


def test_runs_under_an_old_plan_need_no_allow_deviation_and_an_identical_pair_gates(
    tmp_path: Path, old_plan_today: tuple[dict[str, Any], Path]
) -> None:
    """The old plan's cases share 3 haystack variants: version 3 of the gate's tests clusters on
    them (issue 48), where three clusters cannot show non-inferiority, so the identical pair is
    INCONCLUSIVE where it PASSed, and the record says so once."""
    _, plan = old_plan_today
    alone = invoke("run", OLD / "experiment.yaml", "--plan", plan, "--out", tmp_path / "alone")
    assert alone.exit_code == 0, alone.output
    paired = invoke(
        "run", OLD / "experiment.yaml", "--plan", plan, "--pair", "fake/lexical,fake/lexical",
        "--out", tmp_path / "aa",
    )  # fmt: skip
    assert paired.exit_code == 0, paired.output
    for folder in (tmp_path / "alone", tmp_path / "aa" / "baseline", tmp_path / "aa" / "candidate"):
        with RunStore.read(folder) as store:
            assert store.meta()["plan"]["deviations"] == []
    # the gate reads the old plan file itself (it compares the protocol groups, not the subject)
    gate = invoke(
        "gate", "--baseline", tmp_path / "aa" / "baseline", "--candidate", tmp_path / "aa" / "candidate",
        "--plan", OLD / "plan.json", "--json", "-o", tmp_path / "record.json",
    )  # fmt: skip
    assert gate.exit_code == 3, gate.output
    record = json.loads(gate.stdout)
    assert record["verdict"] == "INCONCLUSIVE" and record["decided_by"] == ["pooled non-inferiority"]
    assert record["tests"]["clustered_on"] == "3 haystack variants"
    assert "it would be PASS" in record["tests"]["cluster_note"]
    assert "judged with this version's tests" in record["tests"]["note"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"lengths": [240]}, "grid.lengths"),
        ({"depths": ["beginning", "end"]}, "grid.positions"),
        ({"seed": 3}, "seeds.layout"),
        ({"generation": {"max_tokens": 8}}, "decoding.max_tokens"),
        ({"gate": {"margin": 0.2, "min_instances": 5}}, "analysis.margin"),
        ({"limit": 11}, "grid.limit"),
    ],
)
def test_a_genuine_change_under_an_old_plan_still_exits_2_naming_the_field(
    tmp_path: Path, old_plan_today: tuple[dict[str, Any], Path], change: dict[str, Any], field: str
) -> None:
    _, plan = old_plan_today
    result = invoke("run", _experiment(tmp_path, **change), "--plan", plan, "--out", tmp_path / "run")
    assert_bad_input(result, f"at {field}: plan ")
    assert not (tmp_path / "run").exists()


def test_the_gate_refuses_a_run_that_deviates_from_an_old_plan(tmp_path: Path) -> None:
    run = invoke("run", _experiment(tmp_path, seed=3), "--out", tmp_path / "other")
    assert run.exit_code == 0, run.output
    other = tmp_path / "other"
    gate = invoke("gate", "--baseline", other, "--candidate", other, "--plan", OLD / "plan.json")
    assert_bad_input(gate, "deviates from the plan at seeds.layout")


def test_a_dry_run_under_a_plan_calls_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_plan_today: tuple[dict[str, Any], Path]
) -> None:
    calls = count_fake_calls(monkeypatch)
    _, plan = old_plan_today
    result = invoke("run", OLD / "experiment.yaml", "--plan", plan, "--dry-run", "--out", tmp_path / "dry")
    assert result.exit_code == 0, result.output
    assert "36 work items" in " ".join(result.output.split())  # it planned 12 cases x 3 positions
    deviating = invoke("run", _experiment(tmp_path, seed=3), "--plan", plan, "--dry-run")
    assert_bad_input(deviating, "at seeds.layout: plan ")
    assert calls == [] and not (tmp_path / "dry").exists()
    ran = invoke("run", OLD / "experiment.yaml", "--plan", plan, "--out", tmp_path / "ran")
    assert ran.exit_code == 0 and len(calls) == 36  # the count sees a run's calls
