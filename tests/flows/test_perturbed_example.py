"""examples/perturbed-django.yaml as shipped: diskcache (on disk wherever rotscope is, through
llama-cpp-python) perturbed by the example's map, planned on a fake backend (every prompt placed
and verified in each of the tree's three rotations, the item counts, each broad question's fake
needles in its prompts), then run on
fake/lexical with the accuracy of each question in ``show``, ``show --markdown`` and the report."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rotscope.backends import create_backend
from rotscope.cli import app
from rotscope.config.experiment import load_config
from rotscope.filler.perturb import load_map, perturb_tree
from rotscope.plan.workitems import build_plan

EXAMPLES = Path(__file__).parents[2] / "examples"
_CASE_IDS = ("bender-fallback", "scruffy-limit", "kif-rate", "fry-retry")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.find_spec("diskcache")
    assert spec is not None and spec.submodule_search_locations, "diskcache comes with llama-cpp-python"
    source = Path(next(iter(spec.submodule_search_locations)))
    out = tmp_path_factory.mktemp("bender") / "code"
    map_path = EXAMPLES / "perturbed-django.map.yaml"
    perturb_tree(source, load_map(map_path), out, map_name=str(map_path))
    return out


def _example(tree: Path, folder: Path, **changes: object) -> Path:
    data = yaml.safe_load((EXAMPLES / "perturbed-django.yaml").read_text(encoding="utf-8"))
    data["filler"]["path"] = str(tree)
    data["model"] = "fake/lexical"
    data.update(changes)
    path = folder / "perturbed.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _question(case_id: str) -> str | None:
    """The example's question of a case asked in one rotation (``kif-rate@2``); None for a control."""
    question, _, rotation = case_id.rpartition("@")
    return question if rotation.isdigit() else None


def _standing(value: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", text) is not None


def test_the_example_plans_every_prompt_with_its_line_and_fake_needles(tree: Path, tmp_path: Path) -> None:
    config = load_config(_example(tree, tmp_path))
    backend = create_backend(config)
    plan = build_plan(config, backend)
    assert plan.rejected == []
    # 3 rotations x (4 questions x 5 lengths x 3 depths, an evidence-absent control per question and
    # length, and each question with its line alone)
    assert len(plan.items) == 3 * (4 * 5 * 3 + 4 * 5 + 4)
    assert plan.corpus["variants"] == 3
    cases = {
        case["id"]: case for case in yaml.safe_load(_example(tree, tmp_path).read_text())["codebase"]["cases"]
    }
    tokenizer = backend.tokenizer()
    probes = [
        item
        for item in plan.items
        if _question(item.case.case_id) in cases and item.layout.position != "evidence-only"
    ]
    assert len(probes) == 3 * 60
    assert {(item.case.case_id, item.haystack_variant) for item in probes} == {
        (f"{case_id}@{k}", k) for case_id in cases for k in range(3)
    }
    for item in probes:
        record = cases[str(_question(item.case.case_id))]
        (span,) = item.prompt.spans
        line = tokenizer.decode(list(item.prompt.token_ids[span.token_start : span.token_end])).strip()
        assert record["evidence"]["line_contains"] in line and str(record["answer"]) in line
        assert item.prompt.text.count(line) == 1
        if record.get("kind") == "control":
            assert not record.get("decoys")
        else:  # a broad question competes with at least one of its fake needles in every prompt
            assert any(_standing(str(decoy), item.prompt.text) for decoy in record["decoys"]), item.layout
    assert {item.case.slices for item in probes} == {(("kind", "question"),), (("kind", "control"),)}


def test_each_rotation_sets_other_code_around_the_evidence_and_one_tree_stays_as_before(
    tree: Path, tmp_path: Path
) -> None:
    config = load_config(_example(tree, tmp_path, lengths=[2048]))
    plan = build_plan(config, create_backend(config))
    at_end = {
        item.haystack_variant: item.prompt.text
        for item in plan.items
        if item.case.case_id.startswith("fry-retry@") and item.layout.position == "end"
    }
    # _fry_retry is djangocache.py's last line: at the end of a window, the code before it is that
    # file's, and past it comes the next file of each rotation's ring
    assert len(set(at_end.values())) == 3
    single = _example(tree, tmp_path, lengths=[2048])
    data = yaml.safe_load(single.read_text(encoding="utf-8"))
    del data["filler"]["variants"]
    single.write_text(yaml.safe_dump(data), encoding="utf-8")
    one = load_config(single)
    plan = build_plan(one, create_backend(one))
    assert {item.case.case_id for item in plan.items if item.layout.position == "end"} == set(_CASE_IDS)
    assert {item.haystack_variant for item in plan.items} == {0} and len(plan.items) == 4 * 3 + 4 + 4


def test_more_rotations_than_files_is_bad_input(tree: Path, tmp_path: Path) -> None:
    path = _example(tree, tmp_path, lengths=[512])
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["filler"]["variants"] = 7
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert (
        "filler.variants: 7 rotations of the tree asked" in result.stderr and "has 6 files" in result.stderr
    )
    assert "Traceback" not in result.output


def test_a_decoy_missing_from_the_code_base_is_bad_input(tree: Path, tmp_path: Path) -> None:
    path = _example(tree, tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["codebase"]["cases"][1]["decoys"] = [100, 123457]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "codebase.cases.1.decoys: '123457' is in no file" in result.stderr
    assert "Traceback" not in result.output


def test_show_and_the_report_list_each_questions_accuracy(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    path = _example(tree, tmp_path, lengths=[512, 1024])
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(CliRunner().invoke(app, ["show", str(out), "--json"]).stdout)
    cases = {case["case_id"]: case for case in summary["cases"]}
    assert set(cases) == {f"{case_id}@{k}" for case_id in _CASE_IDS for k in range(3)}
    # 12 instances in 3 rotations: the gap between the lengths has an interval, clustered on them
    (task,) = summary["tasks"]
    (gap,) = task["degradation"]
    assert gap["pairs"] == 12 and gap["clusters"] == 3 and gap["cluster_on"] == "variant"
    assert not gap["too_few"] and gap["ci_low"] is not None and gap["ci_high"] is not None
    for case in cases.values():
        assert case["scored"] == 6 and [entry["length"] for entry in case["lengths"]] == [512, 1024]
        assert sum(entry["correct"] for entry in case["lengths"]) == case["correct"]
    terminal = CliRunner().invoke(app, ["show", str(out)]).stdout
    markdown = CliRunner().invoke(app, ["show", str(out), "--markdown"]).stdout
    report = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", str(out), "-o", str(report)]).exit_code == 0
    html = report.read_text(encoding="utf-8")
    assert "accuracy per question" in terminal and "Accuracy per question" in html
    for case_id, case in cases.items():
        counts = f"{case['correct']}/{case['scored']}"
        control = " (control)" if case_id.startswith("fry-retry@") else ""
        assert f"codebase {case_id}{control}: " in terminal and f"({counts})" in terminal
        assert f"| {case_id}: {case['question']} |" in markdown and f"| {counts} |" in markdown
        assert f"{case['correct']} / {case['scored']}" in html and case["question"] in html
    assert "clustered on 3 haystack variants" in terminal and "gap +0.00 [" in terminal
