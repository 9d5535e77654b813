"""The shipped ``examples/gate/`` end to end with its model set to the scripted ``fake/lexical``:
``plan`` states what the gate can decide (and agrees with the gate itself on simulated runs), an
identical candidate PASSes (exit 0), a candidate that reads only the tail of its prompt FAILs
(exit 1) with the slice and the supported window named in its record."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.config.experiment import GateConfig
from rotscope.gate.decision import FAIL, INCONCLUSIVE, PASS, decide
from rotscope.gate.judgement import judge_slices, overall_verdict, rule_of
from rotscope.gate.pairing import RunData, build_slices, load_run
from rotscope.gate.sizing import Design, Truth, simulate
from rotscope.gate.verdict import slice_design
from rotscope.position import NAMED_POSITIONS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gate"
ON_ROWS = 60
"""Simulated datasets per truth also judged on rows, the gate's own path (a tenth of a second each)."""


def _invoke(*args: str | Path) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example copied with ``model: fake/lexical``, its plan, an A/A paired session of that model
    with itself and a paired session against ``fake/lexical-recent``."""
    root = tmp_path_factory.mktemp("gate-example")
    shutil.copy(EXAMPLE / "cases.jsonl", root / "cases.jsonl")
    data = yaml.safe_load((EXAMPLE / "experiment.yaml").read_text(encoding="utf-8"))
    data["model"] = "fake/lexical"
    (root / "experiment.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    made = {"root": root, "experiment": root / "experiment.yaml", "plan": root / "plan.json"}
    result = _invoke("plan", made["experiment"], "-o", made["plan"])
    assert result.exit_code == 0, result.output
    (root / "plan.txt").write_text(result.output, encoding="utf-8")
    # An A/A session: the model paired with itself, as an unchanged release is gated.
    result = _invoke(
        "run", made["experiment"], "--plan", made["plan"], "--pair", "fake/lexical,fake/lexical",
        "--out", root / "aa",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    made["baseline"], made["same"] = root / "aa" / "baseline", root / "aa" / "candidate"
    result = _invoke(
        "run", made["experiment"], "--plan", made["plan"], "--pair", "fake/lexical,fake/lexical-recent",
        "--out", root / "pair",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    made["pair"] = root / "pair"
    return made


def _shown(example: dict[str, Path], name: str) -> float:
    text = " ".join((example["root"] / "plan.txt").read_text(encoding="utf-8").split())
    found = re.search(re.escape(name) + r"\) = ([0-9.]+)", text)
    assert found, (name, text)
    return float(found.group(1))


def test_an_identical_candidate_passes_the_tests_and_fails_on_its_forbidden_claims(
    example: dict[str, Path],
) -> None:
    """fake/lexical answers some cases with their distractor's line, which states a forbidden claim:
    the tests pass an identical candidate, and the forbidden claims FAIL it on their own line."""
    record_path = example["root"] / "pass.json"
    result = _invoke(
        "gate", "--baseline", example["baseline"], "--candidate", example["same"], "--plan", example["plan"],
        "-o", record_path,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert record["verdict"] == "FAIL" and record["decided_by"] == ["forbidden claims"]
    assert record["reasons"][1] == "the tests alone: PASS"
    assert record["forbidden"]["claims"] == record["claims"]["baseline"]["forbidden"]
    assert record["forbidden"]["replies"] > 0
    assert record["supported_up_to"] == {"cases": 500}
    assert "cases: supported up to 500 tokens (the longest tested)" in " ".join(result.output.split())


def test_a_tail_reading_candidate_fails_with_exit_1_naming_the_slice_and_window(
    example: dict[str, Path],
) -> None:
    pair = example["pair"]
    result = _invoke(
        "gate", "--baseline", pair / "baseline", "--candidate", pair / "candidate", "--plan", example["plan"],
        "--json", "-o", example["root"] / "fail.json",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["verdict"] == "FAIL" and "slice FAIL test" in record["decided_by"]
    failing = [(item["length"], item["position"]) for item in record["slices"] if item["verdict"] == "FAIL"]
    assert (250, "beginning") in failing and all(position != "end" for _, position in failing)
    assert any("cases @ 250 beginning" in reason for reason in record["reasons"])
    assert record["supported_up_to"] == {"cases": None}
    assert record["support"]["cases"]["sentence"] == "no tested length supported; 250 fails at the beginning"
    markdown = _invoke(
        "gate", "--baseline", pair / "baseline", "--candidate", pair / "candidate", "--plan", example["plan"],
        "--markdown", "-o", example["root"] / "fail-md.json",
    )  # fmt: skip
    assert "### Supported window" in markdown.stdout
    assert "cases: no tested length supported; 250 fails at the beginning" in markdown.stdout


def _runs(design: Design, base: np.ndarray, cand: np.ndarray) -> tuple[RunData, RunData]:
    made: dict[str, list[dict[str, object]]] = {"baseline": [], "candidate": []}
    for column, (task, length, position, _) in enumerate(design.keys):
        for cluster in np.flatnonzero(design.count[:, column]):
            for role, sums in (("baseline", base), ("candidate", cand)):
                made[role].append(
                    {
                        "task": task, "case_id": f"c{cluster}", "instance_id": f"c{cluster}",
                        "length_target": length, "position": position, "depth": NAMED_POSITIONS[position],
                        "trial": 0, "control": 0, "status": "ok",
                        "outcome": "correct" if sums[cluster, column] else "incorrect",
                    }
                )  # fmt: skip
    return RunData(Path("b"), {}, made["baseline"]), RunData(Path("c"), {}, made["candidate"])


def _as_rows(design: Design, base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, ...]:
    """The [datasets, clusters, slices] sums and the counts of the rows ``_runs`` writes: one row
    per cluster and design column, correct where any simulated item was, sliced by task, length and
    position (the columns' case fields are not written)."""
    slices = sorted({key[:3] for key in design.keys})
    group = np.array([[key[:3] == item for item in slices] for key in design.keys], dtype=float)
    seen = (design.count > 0) * 1.0
    return ((base > 0) * seen) @ group, ((cand > 0) * seen) @ group, seen @ group


def test_plan_states_what_the_gate_itself_does_on_simulated_runs(example: dict[str, Path]) -> None:
    """Datasets simulated under the plan's stated truth, judged by the gate's own path
    (build_slices -> judge_slices -> overall_verdict on their rows), give the rates ``plan``
    printed within 0.05. The rows path judges the first ``ON_ROWS`` datasets of each truth and
    ``decide`` on the same data (the tests on arrays) all of them, and the two agree on every
    dataset both judged: a rows path that moved a rate by 0.05 (15 of 300 verdicts) would differ
    among the first 60 with probability above 0.9."""
    slices, _ = build_slices(load_run(example["baseline"]), load_run(example["same"]))
    design = slice_design(slices)
    settings = GateConfig.model_validate(json.loads(example["plan"].read_text(encoding="utf-8"))["analysis"])
    rule = rule_of(settings)
    datasets = 300
    count = len(design.keys)
    codes = {"PASS": PASS, "FAIL": FAIL, "INCONCLUSIVE": INCONCLUSIVE}
    for name, drop, verdict in (
        ("P(PASS | identical", 0.0, "PASS"),
        ("P(FAIL | 2x margin everywhere", 2 * settings.margin, "FAIL"),
    ):
        rng = np.random.default_rng(11)
        base, cand = simulate(rng, design, [0.9] * count, [0.9 - drop] * count, datasets, Truth())
        verdicts = decide(*_as_rows(design, base, cand), rule, bounds=False).verdict
        for number in range(ON_ROWS):
            judged, _ = build_slices(*_runs(design, base[number], cand[number]))
            pooled = judge_slices(judged, settings)
            on_rows = overall_verdict(judged, {}, settings, pooled=pooled)[0]
            assert codes[on_rows] == verdicts[number], (name, number, on_rows)
        rate = float(np.mean(verdicts == codes[verdict]))
        assert abs(rate - _shown(example, name)) <= 0.05, (name, rate)
