"""``run --score``: what each row keeps on a fake with a known likelihood curve, the evidence-absent
control's reading beside its case's, a failed reading as an error row that ``--resume`` reads
again, and a likelihood asked of a backend that cannot refused before any call."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends.curve import LogisticCurve
from rotscope.backends.fake import FakeBackend, responder_for
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.store import RunStore
from rotscope.types import Likelihood, LikelihoodRequest


def config(**changes: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "model": "fake/curve-700",
        "tasks": ["niah"],
        "lengths": [256, 1024],
        "depths": [0.5],
        "limit": 4,
        "controls": True,
    }
    data.update(changes)
    return build_config(data)


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY case_id, length_target")]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_experiment(config(), run_dir=tmp_path_factory.mktemp("both") / "run")


def test_both_is_the_default_and_each_row_keeps_its_reply_and_its_reading(both: Path) -> None:
    with RunStore.read(both) as store:
        assert store.meta()["score"] == "both"
    curve = LogisticCurve(700.0)
    cases = [row for row in rows(both) if not row["control"]]
    assert cases and all(row["outcome"] in ("correct", "abstained") for row in cases)
    for row in cases:
        # the curve's chance for the question at the prompt's length, on the answer's tokens only
        chance = curve.chance(row["question"], row["prompt_tokens"])
        assert math.exp(row["answer_logprob"]) == pytest.approx(chance, rel=1e-9)
        assert row["answer_tokens"] >= 1 and 0 < row["first_token_prob"] <= 1


def test_the_absent_controls_reading_of_the_cases_answer_sits_beside_the_case(both: Path) -> None:
    found = rows(both)
    controls = {(r["case_id"], r["length_target"]): r for r in found if r["control"]}
    cases = [row for row in found if not row["control"]]
    for row in cases:
        control = controls[(f"{row['case_id']}~absent", row["length_target"])]
        assert math.exp(control["answer_logprob"]) == pytest.approx(0.01)  # not in its context
        assert row["absent_logprob"] == pytest.approx(control["answer_logprob"])
    assert all(row["absent_logprob"] is None for row in found if row["control"])


def test_likelihood_only_sends_no_generation_and_keeps_the_same_readings(both: Path, tmp_path: Path) -> None:
    only = run_experiment(config(score="likelihood"), run_dir=tmp_path / "only")
    read = {(r["case_id"], r["length_target"]): r for r in rows(only)}
    for row in rows(both):
        twin = read[(row["case_id"], row["length_target"])]
        assert twin["status"] == "ok" and twin["response"] is None and twin["outcome"] is None
        assert twin["usage_completion_tokens"] == 0
        assert twin["answer_logprob"] == pytest.approx(row["answer_logprob"])
    with RunStore.read(only) as store:
        assert store.meta()["score"] == "likelihood"


def test_accuracy_only_reads_nothing(tmp_path: Path) -> None:
    run = run_experiment(config(score="accuracy", controls=False), run_dir=tmp_path / "acc")
    assert all(row["answer_logprob"] is None and row["outcome"] for row in rows(run))


def test_a_backend_that_cannot_read_is_refused_before_any_call(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--score likelihood: the fake-remote backend cannot"):
        run_experiment(config(model="fake-remote/lexical", score="likelihood"), run_dir=tmp_path / "no")
    assert not (tmp_path / "no" / "run.db").exists()


class FailsFirstReadings(FakeBackend):
    """The curve fake whose first ``failures`` readings fail (an engine fault)."""

    def __init__(self, failures: int) -> None:
        super().__init__("curve-700", responder_for("curve-700"), curve=LogisticCurve(700.0))
        self.failures = failures

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        if self.failures > 0:
            self.failures -= 1
            return Likelihood(error="RuntimeError: the engine faulted")
        return await super().likelihood(request)


def test_a_failed_reading_is_an_error_row_never_scored_and_resume_reads_it_again(tmp_path: Path) -> None:
    run = run_experiment(config(controls=False), run_dir=tmp_path / "run", backend=FailsFirstReadings(2))
    errors = [row for row in rows(run) if row["status"] == "error"]
    assert len(errors) == 2
    assert all(row["error"].startswith("likelihood: ") and row["answer_logprob"] is None for row in errors)
    resume_experiment(run)
    assert all(row["status"] == "ok" and row["answer_logprob"] is not None for row in rows(run))
