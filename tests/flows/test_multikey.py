"""The ``multikey`` family: keys of one prompt at depths of their own, found again from the rendered
prompt text alone; each key's row counted in its own depth's cell while the prompt stays the
cluster; a model failing only at depth 0.5 shows the drop there alone."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import ExperimentConfig, build_config, load_config
from rotscope.execution.state.run_folder import planned_rows
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.slices import slice_shape
from rotscope.plan.workitems import build_plan
from rotscope.tasks import get_task
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multikey.yaml"
NEEDLE = re.compile(r"^The access code of locker (\S+) is (\d+)\.$")
QUESTION = re.compile(r"^(Q\d+): What is the access code of locker (\S+)\?$", re.MULTILINE)


def _config(tmp_path: Path, **fields: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "mk",
        "model": "fake/lexical",
        "tasks": ["multikey"],
        "lengths": [600],
        "depths": [0.0, 0.5, 1.0],
        "questions_per_prompt": 3,
        "limit": 6,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


def _read(text: str) -> tuple[list[tuple[str, str]], dict[str, tuple[str, float]]]:
    """From a prompt's text alone: the questions (label, locker) in asked order, and each locker's
    code and depth (context words before its line over all context words but the needles')."""
    context, footer = text.split("<context>", 1)[1].split("</context>", 1)
    lines = [line for line in context.splitlines() if line.strip()]
    needles = [(i, NEEDLE.fullmatch(line)) for i, line in enumerate(lines)]
    filler_words = [
        0 if match else len(line.split()) for (_, match), line in zip(needles, lines, strict=True)
    ]
    total = sum(filler_words)
    found = {
        match.group(1): (match.group(2), sum(filler_words[:i]) / total)
        for i, match in needles
        if match is not None
    }
    return QUESTION.findall(footer), found


def test_each_prompt_puts_its_keys_at_distinct_depths_asked_out_of_depth_order(tmp_path: Path) -> None:
    config = _config(tmp_path, questions_per_prompt=2, limit=None)
    bundles = list(get_task("multikey", config).cases())
    assert len(bundles) == 12
    per_depth: Counter[float] = Counter()
    for bundle in bundles:
        assert bundle.own_depths and len(bundle.parts) == 2
        depths = [part.at_depth[0] for _, part in bundle.parts if part.at_depth]
        assert len(set(depths)) == 2 and depths != sorted(depths)
        per_depth.update(depths)
        # each key's single evidence piece is pinned at its part's depth
        for _, part in bundle.parts:
            assert [e.depth for e in part.evidence] == [part.at_depth[0] if part.at_depth else None]
    assert per_depth == {0.0: 8, 0.5: 8, 1.0: 8}  # every depth covered, evenly over the blocks


def test_answers_and_depths_recomputed_from_the_rendered_text(tmp_path: Path) -> None:
    config = _config(tmp_path)
    backend = FakeBackend("lexical", lambda request: "")
    plan = build_plan(config, backend)
    assert not plan.rejections
    probes = [item for item in plan.items if not item.case.control]
    assert len(probes) == 6  # one layout per length: the depths are inside the prompt
    for item in probes:
        questions, found = _read(item.prompt.text)
        assert [label for label, _ in questions] == [label for label, _ in item.case.parts]
        rows = planned_rows(item, 0, "run", "fake")
        assert {row["instance_id"] for row in rows} == {item.case.case_id}
        for (label, locker), (_, part), row in zip(questions, item.case.parts, rows, strict=True):
            code, depth = found[locker]
            assert code == part.oracle.answer and row["expected"] == code
            assert part.at_depth is not None
            assert abs(depth - part.at_depth[0]) <= 0.1, (label, depth, part.at_depth)
            assert (row["depth"], row["position"]) == part.at_depth
        asked = [found[locker][1] for _, locker in questions]
        assert asked != sorted(asked)


def _experiment(tmp_path: Path, model: str) -> Path:
    corpus = nonsense_corpus(tmp_path / "corpus")
    path = tmp_path / f"{model.replace('/', '-')}.yaml"
    path.write_text(
        f"name: mk\ntasks: [multikey]\nmodel: {model}\nlengths: [600]\ndepths: [0.0, 0.5, 1.0]\n"
        f"questions_per_prompt: 3\nlimit: 6\nfiller: {{kind: text, glob: '{corpus}/*.txt'}}\n",
        encoding="utf-8",
    )
    return path


def test_a_model_failing_only_at_depth_half_drops_only_those_cells(tmp_path: Path) -> None:
    """Through the command line with the registered scripted fake: ``fake/blind-0.5`` abstains on
    the keys whose lines sit near depth 0.5, ``fake/blind-0.25`` on none of the grid's depths."""
    summaries = {}
    for model in ("fake/blind-0.25", "fake/blind-0.5"):
        run_dir = tmp_path / model.replace("/", "-")
        result = invoke("run", _experiment(tmp_path, model), "--out", run_dir)
        assert result.exit_code == 0, result.output
        summaries[model] = load_summary(run_dir).model_dump()
    for model, summary in summaries.items():
        cells = {cell["depth"]: cell for cell in summary["cells"] if cell["task"] == "multikey"}
        assert sorted(cells) == [0.0, 0.5, 1.0]
        for depth, cell in cells.items():
            # six prompts: every cell holds one key of each, so six clusters
            assert (cell["n"], cell["instances"], cell["errors"]) == (6, 6, 0)
            failing = model == "fake/blind-0.5" and depth == 0.5
            assert cell["accuracy"] == (0.0 if failing else 1.0), (model, depth)
            assert cell["categories"] == ({"abstained": 6} if failing else {})
        (length,) = summary["lengths"]
        assert (length["n"], length["instances"]) == (18, 6)
        (control,) = summary["controls"]
        assert (control["n"], control["correct"]) == (18, 18)
    assert summaries["fake/blind-0.5"]["lengths"][0]["accuracy"] == pytest.approx(2 / 3)
    assert "fake/blind-DEPTH" in invoke("models").output


def test_the_plan_counts_a_gate_slice_per_key_depth(tmp_path: Path) -> None:
    """Rows of one prompt land in three depth cells, and the gate slices them there: the plan's
    power statement must count 3 slices of 6 prompts at one length, not one slice per layout."""
    config = _config(tmp_path, controls=False)
    plan = build_plan(config, FakeBackend("lexical", lambda request: ""))
    assert slice_shape(plan) == {"slices": 3, "instances_per_slice": 6, "clusters": 6}


def test_more_keys_than_depths_is_a_one_line_error(tmp_path: Path) -> None:
    experiment = tmp_path / "mk.yaml"
    corpus = nonsense_corpus(tmp_path / "corpus")
    experiment.write_text(
        f"tasks: [multikey]\nmodel: fake/lexical\nlengths: [600]\ndepths: [0.0, 1.0]\n"
        f"questions_per_prompt: 3\nfiller: {{kind: text, glob: '{corpus}/*.txt'}}\n",
        encoding="utf-8",
    )
    assert_bad_input(invoke("run", experiment, "--out", tmp_path / "run"), "questions_per_prompt", "got 3")
    experiment.write_text(experiment.read_text().replace("[0.0, 1.0]", "[0.5]").replace(": 3", ": 1"))
    assert_bad_input(invoke("run", experiment, "--out", tmp_path / "run2"), "depths", "multikey")


def test_example_file_runs_with_the_lexical_fake(tmp_path: Path) -> None:
    corpus = nonsense_corpus(tmp_path / "corpus")
    config = load_config(
        EXAMPLE,
        {
            "model": "fake/lexical",
            "lengths": [1024],
            "limit": 2,
            "filler": {"kind": "text", "glob": f"{corpus}/*.txt"},
        },
    )
    summary = load_summary(run_experiment(config, run_dir=tmp_path / "run")).model_dump()
    cells = [cell for cell in summary["cells"] if cell["task"] == "multikey"]
    assert [cell["depth"] for cell in cells] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert summary["items"]["errors"] == 0 and summary["items"]["rejected_prompts"] == 0
    for cell in cells:
        # the string matcher gives one context line, not one line per question: a format failure
        assert (cell["n"], cell["instances"], cell["categories"]) == (2, 2, {"format": 2})
