"""Subjects end to end on scripted models: a subject carrying a system prompt or a chat template pairs
with the baseline and gates, the record lists the layouts that moved apart from the answers that
changed, a plain model name still pairs, an unknown subject is one line of bad input, and a FAILed
gate's record carries the rollback: the baseline's digests to restore and the command that turns
the newly failing layouts into permanent cases, which yields cases (replayed layouts too)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import rotscope
from rotscope.execution.state.run_folder import CONFIG_FILE
from rotscope.gate.rollback import cases_command
from rotscope.store import RunStore
from rotscope.tasks.cases import read_case_file
from tests.support.cli_helpers import assert_bad_input, bpe_tokenizer_folder, invoke, nonsense_corpus

RECORDED = Path(__file__).parents[2] / "examples" / "replay" / "recorded.jsonl"
FAKE_AGENT = Path(__file__).parents[1] / "support" / "fake_agent.py"
TEMPLATE = "{% for m in messages %}[{{ m.role }}]\n{{ m.content }}\n{% endfor %}[assistant]\n"
SUBJECTS: list[dict[str, Any]] = [
    {"name": "current", "model": "fake/lexical"},
    {"name": "prompted", "model": "fake/lexical", "system_prompt": "Answer with the words of the context."},
    {"name": "templated", "model": "fake/lexical", "chat_template": "chat.jinja"},
    {"name": "recent", "model": "fake/lexical-recent"},
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("subjects")
    (root / "chat.jinja").write_text(TEMPLATE, encoding="utf-8")
    data: dict[str, Any] = {
        "name": "subjects",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [256, 512],
        "depths": ["beginning", "midpoint", "end"],
        # a haystack per case: the gate clusters on shared ones; 16 cases, so a slice whose every case
        # lost everything is shown to fail at Holm's level (8 are not: docs/statistics.md, issue 48)
        "limit": 16,
        "controls": False,
        "filler": {"variants": 16},
        "gate": {"min_instances": 5},
        "subjects": SUBJECTS,
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    replay = {**data, "tasks": ["replay"], "replay": str(RECORDED), "lengths": [256]}
    (root / "replay.yaml").write_text(yaml.safe_dump(replay), encoding="utf-8")
    return root


def _pair(folder: Path, pair: str, out: str, experiment: str = "exp.yaml") -> Path:
    result = invoke("run", folder / experiment, "--pair", pair, "--out", folder / out)
    assert result.exit_code == 0, result.output
    return folder / out


def _gate(pair: Path) -> tuple[int, dict[str, Any], str]:
    record = pair / "record.json"
    result = invoke(
        "gate", "--baseline", pair / "baseline", "--candidate", pair / "candidate", "-o", record, "--markdown"
    )
    return result.exit_code, json.loads(record.read_text(encoding="utf-8")), result.stdout


def _config(run_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    return loaded


def _cases(command: str, at: Path) -> list[Any]:
    """Run a record's ``rotscope cases`` command (its output file put under ``at``)."""
    words = shlex.split(command)
    assert words[:2] == ["rotscope", "cases"]
    output = at / words[words.index("-o") + 1]
    words[words.index("-o") + 1] = str(output)
    result = invoke(*words[1:])
    assert result.exit_code == 0, result.output
    return read_case_file(output)


@pytest.fixture(scope="module")
def prompted(folder: Path) -> Path:
    return _pair(folder, "current,prompted", "prompted")


@pytest.fixture(scope="module")
def failing(folder: Path) -> Path:
    return _pair(folder, "current,recent", "failing")


def test_a_system_prompt_subject_pairs_and_gates_with_its_prompt_in_its_run_alone(prompted: Path) -> None:
    baseline, candidate = _config(prompted / "baseline"), _config(prompted / "candidate")
    assert candidate["system_prompt"] == SUBJECTS[1]["system_prompt"]
    assert candidate["subject"] == "prompted" and [s["name"] for s in candidate["subjects"]] == ["prompted"]
    assert baseline["system_prompt"] is None and baseline["subject"] == "current"
    with RunStore.read(prompted / "candidate") as store:
        identity = store.meta()["identity"]
    assert identity["subjects"][0]["system_prompt"] == SUBJECTS[1]["system_prompt"]
    code, record, markdown = _gate(prompted)
    assert code in (0, 3) and record["verdict"] != "FAIL"  # the scripted model answers alike
    assert record["candidate"]["subject"] == "prompted"
    assert record["candidate"]["system_prompt_digest"] and record["baseline"]["system_prompt_digest"] is None
    layouts = record["layouts"]
    assert layouts["same_tokenizer"] and layouts["paired_layouts"] == 16 * 2 * 3
    assert layouts["spans_moved"] > 0  # the system message shifts the evidence's tokens
    assert layouts["answers_changed"] == 0 and record["rollback"] is None
    assert "### Layouts" in markdown and "### Rollback" not in markdown


def test_a_chat_template_subject_renders_its_prompts_with_its_template(folder: Path) -> None:
    pair = _pair(folder, "current,templated", "templated")
    code, record, _ = _gate(pair)
    assert code in (0, 3)
    assert record["candidate"]["template_digest"] != record["baseline"]["template_digest"]
    assert not record["layouts"]["same_template"] and record["layouts"]["spans_moved"] > 0
    with RunStore.read(pair / "candidate") as store:
        assert store.meta()["backend"]["chat_template"] == str(folder / "chat.jinja")


def test_a_plain_model_name_still_pairs_beside_a_subject(folder: Path) -> None:
    pair = _pair(folder, "fake/lexical,prompted", "plain")
    baseline = _config(pair / "baseline")
    assert baseline["model"] == "fake/lexical" and baseline["subject"] is None and baseline["subjects"] == []
    assert _config(pair / "candidate")["subject"] == "prompted"


def test_an_unknown_subject_is_one_line_naming_it_and_the_defined_ones(folder: Path) -> None:
    result = invoke("run", folder / "exp.yaml", "--pair", "current,nope", "--out", folder / "nope")
    assert_bad_input(result, "unknown subject 'nope'", "current, prompted, templated, recent")
    assert not (folder / "nope").exists()


def test_a_failed_gate_carries_the_rollback_and_its_cases_command_yields_cases(
    folder: Path, failing: Path
) -> None:
    code, record, markdown = _gate(failing)
    assert code == 1 and record["verdict"] == "FAIL"
    guidance = record["rollback"]
    for key in ("model", "model_digest", "tokenizer_digest", "template_digest", "assembler_digest"):
        assert guidance["restore"][key] == record["baseline"][key]
    assert guidance["restore"]["subject"] == "current" and guidance["restore"]["model"] == "fake/lexical"
    assert guidance["changed"] == ["model"]
    failed_lengths = sorted({s["length"] for s in record["slices"] if s["verdict"] == "FAIL"})
    assert guidance["unsupported_lengths"]["niah"][0] == failed_lengths[0]
    assert "prefixes" in guidance["caches"]["drop"]
    assert "### Rollback" in markdown and guidance["cases_command"] in markdown
    shown = invoke(
        "gate",
        "--baseline",
        failing / "baseline",
        "--candidate",
        failing / "candidate",
        "-o",
        failing / "r.json",
    )
    assert shown.exit_code == 1 and "rollback:" in shown.stdout and "layouts (same tokenizer" in shown.stdout
    cases = _cases(guidance["cases_command"], failing)
    assert cases and all(case.pin and case.origin for case in cases)
    newly = {
        (row["case_id"], row["length_target"], row["position"])
        for row in _rows(failing / "candidate")
        if row["outcome"] != "correct"
    }
    pinned = {(case.case_id, pin.length, pin.position) for case in cases for pin in case.pin}
    assert pinned <= newly  # pinned where the candidate failed


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with RunStore.read(run_dir) as store:
        return [dict(row) for row in store.rows()]


def test_the_cases_command_keeps_newly_failing_replayed_layouts(folder: Path) -> None:
    pair = _pair(folder, "current,recent", "replay", "replay.yaml")
    failed = [row for row in _rows(pair / "candidate") if row["outcome"] in ("incorrect", "abstained")]
    assert failed, "the scripted candidate fails some replayed layouts"
    cases = _cases(cases_command(str(pair / "candidate"), str(pair / "baseline")), pair)
    assert len(cases) >= 1
    assert {case.case_id for case in cases} <= {row["case_id"] for row in failed}
    assert all(origin.task == "replay" for case in cases for origin in case.origin)


def test_a_subjects_override_is_part_of_its_runs_identity(folder: Path, prompted: Path) -> None:
    config_file = prompted / "candidate" / CONFIG_FILE
    original = config_file.read_text(encoding="utf-8")
    data = yaml.safe_load(original)
    data["subjects"][0]["llamacpp"] = {"n_threads": 1}  # a runtime option, yet the subject's
    config_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    try:
        assert_bad_input(invoke("run", "--resume", prompted), "subjects")
    finally:
        config_file.write_text(original, encoding="utf-8")


def test_under_a_frozen_plan_only_the_candidate_or_a_registered_subject_may_deviate(folder: Path) -> None:
    """A subject the plan pre-registered may be the baseline; one it did not, only the candidate."""
    assert invoke("plan", folder / "exp.yaml", "-o", folder / "plan.json").exit_code == 0
    registered = invoke(
        "run", folder / "exp.yaml", "--plan", folder / "plan.json", "--pair", "prompted,current",
        "--out", folder / "registered",
    )  # fmt: skip
    assert registered.exit_code == 0, registered.output
    bare = yaml.safe_load((folder / "exp.yaml").read_text(encoding="utf-8"))
    (folder / "subjects.yaml").write_text(
        yaml.safe_dump({"subjects": bare.pop("subjects")}), encoding="utf-8"
    )
    (folder / "bare.yaml").write_text(yaml.safe_dump(bare), encoding="utf-8")
    assert invoke("plan", folder / "bare.yaml", "-o", folder / "bare.plan.json").exit_code == 0
    frozen = json.loads((folder / "bare.plan.json").read_text(encoding="utf-8"))["config"]
    assert not {"subjects", "subject", "chat_template"} & set(frozen)  # as a plan frozen before subjects
    unregistered = ["run", folder / "bare.yaml", "--plan", folder / "bare.plan.json"]
    unregistered += ["--subjects", folder / "subjects.yaml"]
    assert_bad_input(
        invoke(*unregistered, "--pair", "prompted,current", "--out", folder / "unregistered"), "deviates"
    )
    assert not (folder / "unregistered").exists()


def test_a_candidate_with_another_tokenizer_gets_the_same_layouts_rerendered(folder: Path) -> None:
    """A subject counting in another tokenizer (a command's BPE ``tokenizer.json``): every layout of
    the baseline is rendered and verified again under it, pairs, and the record lists which
    layouts' spans moved apart from which answers changed."""
    corpus = nonsense_corpus(folder / "bpe-corpus")
    tokenizer = bpe_tokenizer_folder(folder / "bpe", corpus) / "tokenizer.json"
    script = folder / "agent.sh"
    source = Path(rotscope.__file__).resolve().parents[1]
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{source}" exec "{sys.executable}" "{FAKE_AGENT}" "$@"\n')
    script.chmod(0o755)
    data = yaml.safe_load((folder / "exp.yaml").read_text(encoding="utf-8"))
    data |= {"lengths": [700], "depths": ["beginning", "end"], "limit": 3}
    data["filler"] = {"kind": "text", "glob": str(corpus / "*.txt")}
    data["subjects"] = [
        {"name": "current", "model": "fake/lexical"},
        {"name": "agent", "model": f"cmd/{script}", "cmd": {"tokenizer": str(tokenizer)}},
    ]
    (folder / "tokenizers.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    pair = _pair(folder, "current,agent", "tokenizers", "tokenizers.yaml")
    code, record, markdown = _gate(pair)
    assert code in (0, 1, 3), markdown  # paired: never refused as not comparable
    layouts = record["layouts"]
    baseline, candidate = _rows(pair / "baseline"), _rows(pair / "candidate")
    assert not layouts["same_tokenizer"] and layouts["paired_layouts"] == len(baseline) == len(candidate) == 6
    assert all(row["status"] == "ok" for row in candidate)
    spans = {(r["case_id"], r["position"]): r["spans"] for r in baseline}
    moved = sum(json.loads(spans[(r["case_id"], r["position"])]) != json.loads(r["spans"]) for r in candidate)
    assert layouts["spans_moved"] >= moved > 0
    outcome = {(r["case_id"], r["position"]): r["outcome"] for r in baseline}
    changed = sum(outcome[(r["case_id"], r["position"])] != r["outcome"] for r in candidate)
    assert layouts["answers_changed"] == changed
