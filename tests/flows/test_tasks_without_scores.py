"""A task with no score, because every call failed, the verifier rejected every prompt or it has no
row at all, is shown as such by every view (terminal ``show``, ``show --json``, ``show
--markdown``, the HTML report) instead of crashing (issue 31, item 8). Each run has niah beside
the task without scores, so the views still show the task that has them."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.report.html import render_report
from rotscope.types import Case, Layout, RenderedPrompt
from tests.support.cli_helpers import invoke, nonsense_corpus

KINDS = ("all-error", "all-rejected", "empty")
WHY = {
    "all-error": "every call failed",
    "all-rejected": "the verifier rejected every prompt",
    "empty": "no rows (the task had no cases)",
}
SHOWN = {**WHY, "all-error": "every row an error — 12 × 'engine down'"}
"""What show and the report say of the task: an all-error task names its most common error with its
count (3 cases x 2 lengths x 2 depths, controls off: 12 rows)."""
LEXICAL = lexical_responder()


def _config(root: Path) -> Any:
    return build_config(
        {
            "name": "unscored",
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "lengths": [200, 400],
            "depths": [0.0, 1.0],
            "limit": 3,
            "controls": False,
            "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
        }
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("unscored")
    config = _config(root)
    found: dict[str, Path] = {}

    # all-error: a run of both tasks whose nolima rows are then turned into error rows.
    found["all-error"] = run_experiment(
        config, run_dir=root / "all-error", backend=FakeBackend("lexical", LEXICAL)
    )
    with closing(sqlite3.connect(found["all-error"] / "run.db")) as db, db:
        db.execute(
            "UPDATE items SET status = 'error', error = 'engine down', outcome = NULL, category = NULL "
            "WHERE task = 'nolima'"
        )

    # all-rejected: the builder refuses every nolima prompt.
    render = PromptBuilder.render

    def rejecting(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        if case.task == "nolima":
            raise PlacementError(f"case {case.case_id}: no room at length {layout.length_tokens}")
        return render(self, case, layout)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PromptBuilder, "render", rejecting)
        found["all-rejected"] = run_experiment(
            config, run_dir=root / "all-rejected", backend=FakeBackend("lexical", LEXICAL)
        )

    # empty: nolima named by the experiment, but no row of it (as a family that made no case).
    found["empty"] = run_experiment(config, run_dir=root / "empty", backend=FakeBackend("lexical", LEXICAL))
    with closing(sqlite3.connect(found["empty"] / "run.db")) as db, db:
        db.execute("DELETE FROM items WHERE task = 'nolima'")
    return found


def _summary(run_dir: Path) -> dict[str, Any]:
    result = invoke("show", run_dir, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("kind", KINDS)
def test_show_json_marks_the_task_and_validates(runs: dict[str, Path], kind: str) -> None:
    summary = _summary(runs[kind])
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    tasks = {analysis["task"]: analysis for analysis in summary["tasks"]}
    assert [analysis["task"] for analysis in summary["tasks"]] == ["niah", "nolima"]
    assert tasks["niah"]["data"] == "scored"
    assert tasks["nolima"]["data"] == kind
    effective = tasks["nolima"]["effective_length"]
    assert (effective["state"], effective["bracket"]["state"]) == ("no-data", "no-data")
    assert effective["unbalanced_lengths"] == [] and effective["base_lengths"] == []
    entries = {entry["task"]: entry for entry in summary["effective_lengths"]["tasks"]}
    assert entries["nolima"]["data"] == kind and entries["nolima"]["state"] == "no-data"
    assert entries["niah"]["state"] != "no-data"  # the task with scores keeps its value


@pytest.mark.parametrize("kind", KINDS)
def test_show_says_why_the_task_has_no_score(runs: dict[str, Path], kind: str) -> None:
    result = invoke("show", runs[kind])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert f"nolima: no scores: {SHOWN[kind]}" in text
    assert "Effective length of fake/lexical on" in text


@pytest.mark.parametrize("kind", KINDS)
def test_markdown_says_why_the_task_has_no_score(runs: dict[str, Path], kind: str) -> None:
    result = invoke("show", runs[kind], "--markdown")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    (row,) = [line for line in lines if line.startswith("| nolima |") and "(nolima-0.85)" in line]
    assert f"no data: {WHY[kind]}" in row


@pytest.mark.parametrize("kind", KINDS)
def test_the_report_says_why_the_task_has_no_score(runs: dict[str, Path], kind: str) -> None:
    report = " ".join(render_report(runs[kind]).split("</script>", 1)[1].split())
    assert f"No scores: {SHOWN[kind]}" in report.replace("&#39;", "'")


def _engine_down(request: object) -> str:
    raise RuntimeError("engine down")


def test_a_run_whose_every_call_failed_shows_and_reports(tmp_path: Path) -> None:
    """The traceback of before (a no-data effective length without ``unbalanced_lengths``, copied
    as ``None`` into the headline and iterated by ``show``) is gone from every view."""
    config = _config(tmp_path).model_copy(update={"tasks": ["niah"]})
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("down", _engine_down))
    summary = _summary(run_dir)
    (entry,) = summary["effective_lengths"]["tasks"]
    assert (entry["data"], entry["unbalanced_lengths"]) == ("all-error", [])
    shown = invoke("show", run_dir)
    assert shown.exit_code == 0, shown.output
    assert "not measured (no data: every call failed" in " ".join(shown.stdout.split())
    assert invoke("show", run_dir, "--markdown").exit_code == 0
    assert "No scores: every row an error — 12 × &#39;RuntimeError: engine down&#39;" in render_report(
        run_dir
    )
