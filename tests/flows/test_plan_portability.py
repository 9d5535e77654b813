"""A committed plan holds across checkouts and rotscope upgrades: a path whose file's content a
digest covers is compared by that digest, not by where the file lies (so a plan frozen in one
folder runs in another, and a changed file still deviates at its digest), and a paired session
under a plan frozen by other prompt-shaping code runs, both subjects assembled by today's code,
with the upgrade recorded as an accepted deviation; a single run under it is still refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from rotscope.plan.digests import assembler_digest
from rotscope.plan.manifest import deviations, read_manifest
from rotscope.store import RunStore
from tests.support.cli_helpers import assert_bad_input, invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gate"
OLD = Path(__file__).resolve().parents[1] / "fixtures" / "plans" / "before-pooled-tests"


def _checkout(root: Path) -> Path:
    """examples/gate copied under ``root`` as a checkout would hold it, on the lexical fake (its
    cases file named relative to the experiment, as the example names it)."""
    folder = root / "examples" / "gate"
    shutil.copytree(EXAMPLE, folder)
    data = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
    data.update({"model": "fake/lexical", "cache_control": False})
    (folder / "experiment.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return folder / "experiment.yaml"


def _meta(run_dir: Path) -> dict[str, Any]:
    with RunStore.read(run_dir) as store:
        return store.meta()


def test_a_plan_frozen_in_one_checkout_runs_in_another_and_a_changed_cases_file_still_deviates(
    tmp_path: Path,
) -> None:
    here, there = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    assert invoke("plan", here, "-o", tmp_path / "gate.plan.json").exit_code == 0
    plan = read_manifest(tmp_path / "gate.plan.json")
    assert plan["config"]["cases"] == str(here.parent / "cases.jsonl")  # the plan names where it was frozen
    run = invoke("run", there, "--plan", tmp_path / "gate.plan.json", "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    assert _meta(tmp_path / "run")["plan"]["deviations"] == []
    cases = there.parent / "cases.jsonl"
    lines = cases.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["question"] = first["question"].replace("How many days", "How many weeks")
    cases.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    changed = invoke("run", there, "--plan", tmp_path / "gate.plan.json", "--out", tmp_path / "changed")
    line = assert_bad_input(changed, "deviates at cases.digest: plan ")
    assert "config.cases" not in line and not (tmp_path / "changed").exists()


def test_paths_compare_by_the_digest_that_covers_their_content_and_other_paths_by_location() -> None:
    """Old plans already hold absolute paths: both sides are read by content. A path no digest
    covers (a replay, a judge's tokenizer) and a covered path whose digest is missing are compared."""

    def manifest(root: str, **digests: Any) -> dict[str, Any]:
        return {
            "cases": {"digest": digests.get("cases", "c1"), "count": 3},
            "filler": {"source": f"text:{root}/corpus/*.txt", "digest": digests.get("filler", "f1")},
            "subject": {"model": f"llamacpp/{root}/m.gguf", "model_digest": digests.get("model", "m1")},
            "config": {
                "model": f"llamacpp/{root}/m.gguf",
                "cases": f"{root}/cases.jsonl",
                "replay": f"{root}/replay.jsonl",
                "filler": {"kind": "text", "glob": f"{root}/corpus/*.txt"},
                "judge": {"remote": {"tokenizer": f"{root}/judge.json"}},
            },
        }

    assert [found.field for found in deviations(manifest("/a"), manifest("/b"))] == [
        "config.replay",
        "config.judge.remote.tokenizer",
    ]
    changed = deviations(manifest("/a"), manifest("/a", cases="c2", filler="f2", model=None))
    assert [found.field for found in changed] == [
        "cases.digest",
        "filler.digest",
        "subject.model",
        "subject.model_digest",
        "config.model",
    ]
    assert changed[2].describe() == (
        'subject.model: plan "llamacpp/<content: subject.model_digest>", run "llamacpp//a/m.gguf"'
    )


def _upgraded_plan(tmp_path: Path) -> Path:
    """A plan of the old-plan experiment as frozen by another rotscope: another version and
    assembler digest (what any commit to the prompt-shaping code changes), all else today's."""
    assert invoke("plan", OLD / "experiment.yaml", "-o", tmp_path / "today.json").exit_code == 0
    plan = read_manifest(tmp_path / "today.json")
    plan["subject"] = {**plan["subject"], "assembler_digest": "0123456789abcdef", "rotscope_version": "0.0.9"}
    path = tmp_path / "upgraded.json"
    path.write_text(json.dumps(plan, indent=2), encoding="utf-8")
    return path


def test_a_pair_under_a_plan_of_another_rotscope_runs_records_the_upgrade_and_the_gate_judges_it(
    tmp_path: Path,
) -> None:
    """Planned again today, the old-plan experiment (which leaves ``filler.variants`` unset) gives each
    case a haystack of its own (issue 48), so the gate clusters on the cases and PASSes the
    identical pair, with no note of a changed rule."""
    plan, out = _upgraded_plan(tmp_path), tmp_path / "aa"
    paired = invoke(
        "run", OLD / "experiment.yaml", "--plan", plan, "--pair", "fake/lexical,fake/lexical", "--out", out
    )
    assert paired.exit_code == 0, paired.output
    today = assembler_digest()
    said = " ".join(paired.output.split())
    assert (
        f"the plan was frozen by rotscope 0.0.9 (assembler 0123456789abcdef); both subjects are assembled "
        f"by rotscope 0.1.0 (assembler {today}): recorded"
    ) in said
    for role in ("baseline", "candidate"):
        meta = _meta(out / role)
        assert meta["plan"]["deviations"] == [
            {"field": "subject.assembler_digest", "planned": "0123456789abcdef", "actual": today},
            {"field": "subject.rotscope_version", "planned": "0.0.9", "actual": "0.1.0"},
        ]
        assert "0.0.9" in meta["pair"]["accepted_upgrade"]
    gate = invoke(
        "gate", "--baseline", out / "baseline", "--candidate", out / "candidate",
        "--plan", plan, "--json", "-o", tmp_path / "record.json",
    )  # fmt: skip
    assert gate.exit_code == 0, gate.output
    record = json.loads(gate.stdout)
    assert record["verdict"] == "PASS" and not record["tests"].get("cluster_note")
    assert record["tests"]["clustered_on"].endswith(" cases")
    assert [found["field"] for found in record["baseline"]["plan_deviations"]] == [
        "subject.assembler_digest",
        "subject.rotscope_version",
    ]


def test_a_single_run_under_a_plan_of_another_rotscope_is_refused_with_the_way_out(tmp_path: Path) -> None:
    plan = _upgraded_plan(tmp_path)
    alone = invoke("run", OLD / "experiment.yaml", "--plan", plan, "--out", tmp_path / "alone")
    assert_bad_input(alone, "deviates at subject.assembler_digest: plan ", "--pair", "freeze the plan again")
    assert not (tmp_path / "alone").exists()
    allowed = invoke(
        "run", OLD / "experiment.yaml", "--plan", plan, "--allow-deviation", "--out", tmp_path / "ok"
    )
    assert allowed.exit_code == 0, allowed.output
    fields = [found["field"] for found in _meta(tmp_path / "ok")["plan"]["deviations"]]
    assert fields == ["subject.assembler_digest", "subject.rotscope_version"]
