"""Every view on either score (issue 49): the summary stands on a chosen score and says which, the
terminal shows both per length with how far they agree, a likelihood asked of a run without
likelihoods is one line and exit 2, and the default is accuracy where the run has replies."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rotscope.analysis.summary import load_summary
from rotscope.cli import app
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.store import RunStore
from tests.support.cli_helpers import assert_bad_input


def _run(out: Path, model: str, **extra: Any) -> Path:
    config = build_config(
        {
            "model": model,
            "tasks": ["niah"],
            "lengths": [256, 512, 1024],
            "depths": [0.25, 0.75],
            "limit": 4,
            "filler": {"kind": "readinglog", "variants": 4},
            "analysis": {"base_lengths": [256]},
            "out": str(out),
            **extra,
        }
    )
    return run_experiment(config)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run on the known curve that keeps both scores (the default where the backend reads them)."""
    return _run(tmp_path_factory.mktemp("both") / "run", "fake/curve-700")


@pytest.fixture(scope="module")
def replies_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run on a backend that cannot read likelihoods."""
    return _run(tmp_path_factory.mktemp("remote") / "run", "fake-remote/lexical")


def test_the_default_is_accuracy_where_the_run_has_replies(both: Path) -> None:
    summary = load_summary(both)
    assert summary.score == "accuracy" and summary.kept == "both"
    # accuracy: every cell's value is a share of 0/1 rows, n the rows
    for cell in summary.cells:
        assert cell.accuracy is not None
        assert math.isclose(cell.accuracy * (cell.n - cell.errors), cell.correct)


def test_a_likelihood_summary_stands_on_the_answer_probability(both: Path) -> None:
    accuracy = load_summary(both)
    likelihood = load_summary(both, "likelihood")
    assert likelihood.score == "likelihood"
    with RunStore.read(both) as store:
        rows = [row for row in store.rows() if not row["control"] and row["status"] == "ok"]
    for cell in likelihood.cells:
        probabilities = [
            math.exp(row["answer_logprob"])
            for row in rows
            if row["length_target"] == cell.length and row["depth"] == cell.depth
        ]
        assert cell.accuracy == pytest.approx(sum(probabilities) / len(probabilities))
    # the curve's chance, not a reply's 0/1: the two summaries differ where replies were drawn
    assert [c.accuracy for c in likelihood.cells] != [c.accuracy for c in accuracy.cells]
    assert likelihood.model_dump()["score"] == "likelihood"


def test_the_agreement_per_task(both: Path) -> None:
    summary = load_summary(both)
    (entry,) = summary.agreement or []
    assert entry.task == "niah" and entry.cells == 6
    assert [line.length for line in entry.lengths] == [256, 512, 1024]
    assert entry.spearman is not None and -1 <= entry.spearman <= 1
    assert (entry.high, entry.low) == (0.5, 0.1)
    with RunStore.read(both) as store:
        rows = [row for row in store.rows() if not row["control"] and row["status"] == "ok"]
    wrong_likely = [r for r in rows if r["outcome"] != "correct" and math.exp(r["answer_logprob"]) >= 0.5]
    right_unlikely = [r for r in rows if r["outcome"] == "correct" and math.exp(r["answer_logprob"]) < 0.1]
    assert entry.likely_but_wrong.n == len(wrong_likely)
    assert entry.right_but_unlikely.n == len(right_unlikely)
    assert sum(entry.likely_but_wrong.categories.values()) == sum(bool(r["category"]) for r in wrong_likely)


def test_the_screen_shows_both_scores_and_names_the_one_it_stands_on(both: Path) -> None:
    shown = CliRunner().invoke(app, ["show", str(both)], env={"COLUMNS": "100"})
    assert shown.exit_code == 0, shown.output
    text = shown.output
    flat = " ".join(text.split())
    assert "scores kept: accuracy and the answer's likelihood; verdicts on accuracy" in flat
    assert text.count("answer probability 0.") >= 3  # a second row for each of the three lengths
    assert "accuracy and answer probability: rank correlation" in text
    # the score's line (at most two lines) just before the closing sentence
    lines = text.splitlines()
    sentence = next(i for i, line in enumerate(lines) if line.startswith("Effective length of"))
    score_line = next(i for i, line in enumerate(lines) if line.startswith("Verdicts on accuracy"))
    assert 1 <= sentence - score_line <= 2
    flipped = CliRunner().invoke(app, ["show", str(both), "--score", "likelihood"], env={"COLUMNS": "100"})
    assert flipped.exit_code == 0, flipped.output
    assert "niah: answer probability by depth × length" in flipped.output
    assert "Verdicts on the answer's likelihood" in flipped.output
    # the closing sentence words its numbers as the score they are
    closing = flipped.output[flipped.output.rindex("Effective length of") :]
    assert "accuracy" not in closing and "answer probability" in closing


def test_a_likelihood_of_a_run_without_one_is_exit_2(replies_only: Path) -> None:
    summary = load_summary(replies_only)
    assert summary.score == "accuracy" and summary.kept == "accuracy" and summary.agreement == []
    with pytest.raises(BadInput, match="has no answer likelihoods"):
        load_summary(replies_only, "likelihood")
    for command in (["show"], ["report"], ["show", "--json"]):
        found = CliRunner().invoke(app, [*command, str(replies_only), "--score", "likelihood"])
        assert found.exit_code == 2, found.output
        assert "no answer likelihoods" in found.output
    shown = CliRunner().invoke(app, ["show", str(replies_only)], env={"COLUMNS": "200"})
    # joined: the console's width depends on what other tests of the worker set
    assert "score kept: accuracy only (the fake-remote backend cannot read an answer's likelihood)" in (
        " ".join(shown.output.split())
    )


def test_a_likelihood_only_run_defaults_to_likelihood(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "fake/lexical", score="likelihood", lengths=[256, 512])
    summary = load_summary(run)
    assert summary.score == "likelihood" and summary.kept == "likelihood"
    # the lexical fake finds every needle: p = 0.9 in every cell
    assert all(cell.accuracy == pytest.approx(0.9) for cell in summary.cells)
    with pytest.raises(BadInput, match="kept only likelihoods"):
        load_summary(run, "accuracy")


def test_compare_and_gate_stand_on_the_score_asked_and_refuse_a_run_without_it(
    both: Path, replies_only: Path, tmp_path: Path
) -> None:
    again = _run(tmp_path / "again", "fake/curve-700")
    runner = CliRunner()
    compared = runner.invoke(app, ["compare", str(both), str(again), "--json", "--score", "likelihood"])
    assert compared.exit_code == 0, compared.output
    record = json.loads(compared.stdout)
    assert record["score"] == "likelihood"
    # the leaderboard's numbers are the answer probability, not a share of right replies
    summary = load_summary(both, "likelihood")
    entry = next(e for e in record["leaderboard"] if e["run"] == both.name)
    assert [length["accuracy"] for length in entry["lengths"]] == pytest.approx(
        [line.instance_accuracy for line in summary.lengths]
    )
    gated = runner.invoke(
        app, ["gate", "--baseline", str(both), "--candidate", str(again), "--json", "--score", "likelihood"]
    )
    assert gated.exit_code in (0, 1, 3), gated.output
    assert json.loads(gated.stdout)["score"] == "likelihood"
    refused = runner.invoke(
        app, ["gate", "--baseline", str(both), "--candidate", str(replies_only), "--score", "likelihood"]
    )
    assert_bad_input(
        refused, f"--score likelihood: the candidate {replies_only.name} has no answer likelihoods"
    )
    refused = runner.invoke(app, ["compare", str(both), str(replies_only), "--score", "likelihood"])
    assert_bad_input(refused, "has no answer likelihoods")


def test_a_run_of_prompts_with_several_questions_says_it_kept_accuracy_only(tmp_path: Path) -> None:
    # questions_per_prompt > 1: a prompt's answers are not read one by one, so the run that asked for
    # both scores has replies only; the screen must not claim the likelihood was kept
    run = _run(tmp_path / "run", "fake/curve-700", questions_per_prompt=2, lengths=[256, 512])
    summary = load_summary(run)
    assert summary.kept == "both" and summary.likelihood_unread
    shown = CliRunner().invoke(app, ["show", str(run)], env={"COLUMNS": "200"})
    flat = " ".join(shown.output.split())
    assert "score kept: accuracy only (a likelihood is read for a prompt of one question with a gold" in flat
    assert "scores kept: accuracy and the answer's likelihood" not in flat
    with pytest.raises(BadInput, match="its prompts have no one gold answer to read"):
        load_summary(run, "likelihood")
    # a run of one question a prompt keeps both and says so
    assert not load_summary(_run(tmp_path / "one", "fake/curve-700", lengths=[256, 512])).likelihood_unread
