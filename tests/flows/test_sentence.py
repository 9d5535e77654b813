"""A run ends with one sentence: the model's effective length on the probe the headline leads
with, placed by the accuracies around it and the paired gap, each with its interval. Checked on the
scripted ``fake/curve-MIDPOINT`` model, whose accuracy falls with length, and on the string
matcher, which never falls."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.records.effective import EffectiveLengths
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.html import render_report
from rotscope.report.sentence import one_sentence
from tests.support.cli_helpers import case_file, invoke, nonsense_corpus


def experiment(tmp_path: Path, model: str) -> Path:
    corpus = nonsense_corpus(tmp_path / "corpus", files=32, lines=300)  # a haystack per case
    config = {
        "name": "sentence",
        "model": model,
        "tasks": ["cases"],
        "cases": str(case_file(tmp_path / "cases.jsonl")),
        "limit": 32,
        "depths": [0.5],
        "lengths": [256, 512, 1024],
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        "analysis": {"base_lengths": [256]},
    }
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def closing(stdout: str) -> str:
    """The closing sentence of a run's screen: its last lines from the last "Effective length of",
    broken after clauses with no indent, so one space joins them back."""
    lines = stdout.rstrip().splitlines()
    start = max(index for index, line in enumerate(lines) if line.startswith("Effective length of"))
    return " ".join(lines[start:])


def summary(run_dir: Path) -> Summary:
    result = invoke("show", run_dir, "--json")
    assert result.exit_code == 0, result.output
    return Summary.model_validate_json(result.stdout)


def test_a_run_whose_accuracy_falls_ends_with_its_effective_length_and_the_gap_that_places_it(
    tmp_path: Path,
) -> None:
    run = invoke("run", experiment(tmp_path, "fake/curve-600"), "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    data = summary(tmp_path / "run").model_dump()
    entry = data["effective_lengths"]["tasks"][0]
    niah = data["tasks"][0]
    assert entry["state"] == "value" and entry["value"] in (256, 512)
    fallen = min(line["length"] for line in niah["lengths"] if line["length"] > entry["value"])
    gap = next(gap for gap in niah["degradation"] if gap["length"] == fallen)
    assert gap["ci_high"] < 0  # the curve falls beyond noise: the interval excludes no loss
    sentence = closing(run.stdout)
    assert sentence.startswith("Effective length of fake/curve-600 on cases:")
    assert f"cases: {entry['value']:,} tokens (nolima-0.85" in sentence
    interval = f"[{gap['ci_low']:+.2f}, {gap['ci_high']:+.2f}]"
    # On the terminal the gap is said once, in its length's line, and the sentence names the length.
    assert f"its accuracy falls below the threshold at {fallen:,} tokens" in sentence
    assert interval not in sentence and run.stdout.count(interval) == 1
    assert f"gap {gap['gap']:+.2f} {interval}" in run.stdout
    shown = invoke("show", tmp_path / "run")
    assert shown.stdout.rstrip().endswith(run.stdout.rstrip().splitlines()[-1])  # show ends the same way
    # The report's headline has no lines above it: its sentence carries the numbers.
    worded = one_sentence(summary(tmp_path / "run"))
    assert worded is not None
    assert f"at {fallen:,} tokens, a paired gap of {gap['gap']:+.2f} {interval}" in worded
    assert "does not rule out" not in worded
    report = render_report(tmp_path / "run")
    assert f'<p id="sentence">{html.escape(worded)}</p>' in " ".join(report.split())


def test_a_model_that_never_falls_is_at_least_the_longest_length_and_says_the_gap_is_noise(
    tmp_path: Path,
) -> None:
    run = invoke("run", experiment(tmp_path, "fake/lexical"), "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    tail = closing(run.stdout)
    assert "Effective length of fake/lexical on cases: at least 1,024 tokens, the longest tested" in tail
    worded = one_sentence(summary(tmp_path / "run"))  # the report's, with its numbers
    assert worded is not None and "a paired gap of +0.00" in worded
    assert "an interval that holds 0, so the loss is not shown" in worded
    assert "no loss" not in worded  # issue 53: no double negative
    assert "paired gap" not in tail  # the terminal's: the gap is in its length's line above


def _line(length: int, accuracy: float | None) -> dict[str, Any]:
    return {
        "length": length,
        "n": 16, "instances": 16, "correct": 0, "incorrect": 0, "abstained": 0, "errors": 0,
        "accuracy": accuracy,
        "instance_accuracy": accuracy,
        "ci_low": 0.1,
        "ci_high": 0.9,
    }  # fmt: skip


def _task(
    task: str, state: str, value: int | None, scores: dict[int, float | None], verdict: str
) -> dict[str, Any]:
    lengths = sorted(scores)
    return {
        "analysis": {
            "task": task,
            "lengths": [_line(length, scores[length]) for length in lengths],
            "degradation": [
                {"length": length, "gap": -0.5, "ci_low": -0.8, "ci_high": -0.2, "pairs": 16}
                for length in lengths[1:]
            ],
            "calibration": {"length": lengths[0], "accuracy": None, "verdict": verdict},
        },
        "entry": {
            "task": task, "definition": "nolima-0.85", "state": state, "value": value,
            "conservative": value if state == "at-least-longest" else None,
            "conservative_state": "value" if state == "value" else state, "base_score": None,
            "calibration": {"length": lengths[0], "verdict": verdict},
        },
    }  # fmt: skip


def _summary(*tasks: dict[str, Any], lead: str | None) -> Summary:
    """The parts of a summary the sentence reads (``model_construct``: the rest is left out)."""
    entries = sorted((t["entry"] for t in tasks), key=lambda entry: entry["task"] != lead)
    return Summary.model_construct(
        model="m",
        tasks=[TaskAnalysis.model_validate(t["analysis"]) for t in tasks],
        effective_lengths=EffectiveLengths.model_validate({"lead": lead, "lead_rule": "", "tasks": entries}),
    )


@pytest.mark.parametrize(
    ("tasks", "lead", "expected"),
    [
        (  # the lead probe, in band, fell after 512
            [_task("nolima", "value", 512, {256: 0.9, 512: 0.9, 1024: 0.3}, "in band")],
            "nolima",
            "Effective length of m on nolima: 512 tokens (nolima-0.85; conservative: below 256 tokens); "
            "accuracy 0.90 [0.10, 0.90] at 256 tokens, 0.90 [0.10, 0.90] at 512 tokens (its effective "
            "length), falling to 0.30 [0.10, 0.90] at 1,024 tokens, "
            "a paired gap of -0.50 [-0.80, -0.20] on 16 instances.",
        ),
        (  # no lead: the probe that fell is taken over the saturated one, and the sentence says so
            [
                _task("niah", "at-least-longest", 1024, {256: 1.0, 1024: 1.0}, "saturated"),
                _task("multikey", "value", 256, {256: 0.8, 1024: 0.3}, "too hard"),
            ],
            None,
            "on multikey: 256 tokens",
        ),
        (
            [_task("niah", "at-least-longest", 1024, {256: 1.0, 1024: 1.0}, "saturated")],
            None,
            "; niah is saturated at 256 tokens for the reference band (0.90-0.95), so no probe leads the "
            "headline.",
        ),
        (  # below the shortest length, which is taken over a probe that held
            [
                _task("niah", "at-least-longest", 1024, {256: 1.0, 1024: 1.0}, "saturated"),
                _task("join", "below-shortest", None, {256: 0.4, 1024: 0.2}, "too hard"),
            ],
            None,
            "Effective length of m on join (nolima-0.85): below 256 tokens, the shortest tested; "
            "accuracy 0.40 [0.10, 0.90] at 256 tokens;",
        ),
        (
            [_task("nolima", "no-signal", None, {256: 0.0, 1024: 0.0}, "too hard")],
            None,
            "Effective length of m on nolima (nolima-0.85): not measured (the base score is too low to "
            "measure a loss).",
        ),
        (
            [_task("nolima", "no-data", None, {256: None, 1024: None}, "no data")],
            None,
            "not measured (no data).",
        ),
        (  # every call at the control length failed: its score is missing, not the base too low
            [_task("niah", "value", 512, {256: None, 512: 0.9, 1024: 0.2}, "no data")],
            None,
            "not measured (no scored calls at the control length, 256 tokens).",
        ),
        (  # one length only: its accuracy once
            [_task("niah", "at-least-longest", 256, {256: 0.9}, "in band")],
            "niah",
            "at least 256 tokens, the longest tested (nolima-0.85; conservative: at least 256 tokens); "
            "accuracy 0.90 [0.10, 0.90] at 256 tokens.",
        ),
    ],
)
def test_the_sentence_in_every_state(tasks: list[dict[str, Any]], lead: str | None, expected: str) -> None:
    sentence = one_sentence(_summary(*tasks, lead=lead))
    assert sentence is not None and expected in sentence, sentence


def test_a_run_without_tasks_has_no_sentence() -> None:
    assert one_sentence(_summary(lead=None)) is None
