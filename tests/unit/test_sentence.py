"""A run ends with one sentence: the model's effective length on the probe the headline leads
with, placed by the accuracies around it and the paired gap, each with its interval. Checked on the
scripted ``fake/curve-MIDPOINT`` model, whose accuracy falls with length, and on the string
matcher, which never falls."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import yaml

from cli_helpers import case_file, invoke, nonsense_corpus
from rotscope.report.html import render_report


def experiment(tmp_path: Path, model: str) -> Path:
    corpus = nonsense_corpus(tmp_path / "corpus", files=4, lines=300)
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


def last_line(output: str) -> str:
    return " ".join(output.split("\n\n")[-1].split())  # the sentence, unwrapped


def summary(run_dir: Path) -> dict[str, Any]:
    result = invoke("show", run_dir, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_run_whose_accuracy_falls_ends_with_its_effective_length_and_the_gap_that_places_it(
    tmp_path: Path,
) -> None:
    run = invoke("run", experiment(tmp_path, "fake/curve-600"), "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    data = summary(tmp_path / "run")
    entry = data["effective_lengths"]["tasks"][0]
    niah = data["tasks"][0]
    assert entry["state"] == "value" and entry["value"] in (256, 512)
    fallen = min(line["length"] for line in niah["lengths"] if line["length"] > entry["value"])
    gap = next(gap for gap in niah["degradation"] if gap["length"] == fallen)
    assert gap["ci_high"] < 0  # the curve falls beyond noise: the interval excludes no loss
    sentence = " ".join(run.stdout.strip().splitlines()[-3:])
    sentence = sentence[sentence.index("Effective length of fake/curve-600 on cases:") :]
    assert f"cases: {entry['value']:,} tokens (nolima-0.85" in sentence
    interval = f"[{gap['ci_low']:+.2f}, {gap['ci_high']:+.2f}]"
    assert f"at {fallen:,} tokens, a paired gap of {gap['gap']:+.2f} {interval}" in sentence
    assert "does not rule out" not in sentence
    shown = invoke("show", tmp_path / "run")
    assert shown.stdout.rstrip().endswith(run.stdout.rstrip().splitlines()[-1])  # show ends the same way
    report = render_report(tmp_path / "run")  # and the report's headline holds the sentence
    assert f'<p id="sentence">{html.escape(sentence)}</p>' in " ".join(report.split())


def test_a_model_that_never_falls_is_at_least_the_longest_length_and_says_the_gap_is_noise(
    tmp_path: Path,
) -> None:
    run = invoke("run", experiment(tmp_path, "fake/lexical"), "--out", tmp_path / "run")
    assert run.exit_code == 0, run.output
    tail = " ".join(" ".join(run.stdout.strip().splitlines()[-4:]).split())
    assert "Effective length of fake/lexical on cases: at least 1,024 tokens, the longest tested" in tail
    assert "a paired gap of +0.00" in tail and "an interval that does not rule out no loss" in tail
