"""Interrupt, errors and resume with the fake backend: nothing finished is lost or redone."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import Interrupted, run_experiment
from rotscope.plan.workitems import Plan, build_plan, item_id
from rotscope.types import GenerateRequest

MODEL = "fake/lexical"
TOTAL = 2 * 2 * 2 + 2 * 2  # 2 cases x 2 lengths x 2 depths, plus 2 controls x 2 lengths


class Recorder:
    """A responder that counts calls, remembers the prompts it saw, and can fail on purpose."""

    def __init__(
        self,
        *,
        interrupt_on: int | None = None,
        fail_if: Callable[[GenerateRequest], bool] | None = None,
    ) -> None:
        self.inner = lexical_responder()
        self.interrupt_on = interrupt_on
        self.fail_if = fail_if
        self.seen: list[tuple[int, ...]] = []

    def __call__(self, request: GenerateRequest) -> str:
        self.seen.append(request.token_ids)
        if self.interrupt_on is not None and len(self.seen) == self.interrupt_on:
            raise KeyboardInterrupt
        if self.fail_if is not None and self.fail_if(request):
            raise RuntimeError("engine exploded")
        return self.inner(request)


def backend(responder: Recorder) -> FakeBackend:
    return FakeBackend("lexical", responder)


@pytest.fixture()
def config(tmp_path: Path, prose: Callable[..., str]) -> ExperimentConfig:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number in range(3):
        (corpus / f"doc{number}.txt").write_text(prose(60, seed=number), encoding="utf-8")
    return build_config(
        {
            "name": "resume-test",
            "model": MODEL,
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [200, 300],
            "depths": [0.0, 1.0],
            "controls": True,
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        }
    )


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def results(run_dir: Path) -> list[tuple[str, str, str]]:
    return [(row["item_id"], row["outcome"], row["response"]) for row in rows(run_dir)]


def plan_for(config: ExperimentConfig) -> Plan:
    return build_plan(config, backend(Recorder()))


def ids_by_prompt(plan: Plan) -> dict[tuple[int, ...], str]:
    mapping = {item.prompt.token_ids: item.item_id for item in plan.items}
    assert len(mapping) == len(plan.items), "each item has its own prompt in this grid"
    return mapping


def test_interrupted_run_keeps_finished_items_and_resume_completes(
    config: ExperimentConfig, tmp_path: Path
) -> None:
    plan = plan_for(config)
    assert len(plan.items) == TOTAL and plan.rejected == []
    by_prompt = ids_by_prompt(plan)

    run_dir = tmp_path / "interrupted"
    first = Recorder(interrupt_on=5)
    with pytest.raises(Interrupted) as stopped:
        run_experiment(config, run_dir=run_dir, backend=backend(first))
    assert stopped.value.done == 4
    assert stopped.value.total == TOTAL
    assert stopped.value.run_dir == run_dir
    kept = rows(run_dir)
    assert len(kept) == TOTAL
    ok = [row for row in kept if row["status"] == "ok"]
    assert len(ok) == 4
    assert {row["status"] for row in kept} == {"ok", "pending"}
    assert all(row["attempts"] == 1 and row["response"] is not None for row in ok)
    # the four stored rows are the first four prompts the model answered
    assert {row["item_id"] for row in ok} == {by_prompt[ids] for ids in first.seen[:4]}

    second = Recorder()
    resumed_backend = backend(second)
    assert run_experiment(config, run_dir=run_dir, resume=True, backend=resumed_backend) == run_dir
    assert resumed_backend.calls == TOTAL - 4
    resumed_ids = [by_prompt[ids] for ids in second.seen]
    assert len(set(resumed_ids)) == len(resumed_ids)  # nothing called twice
    assert not set(resumed_ids) & {row["item_id"] for row in ok}  # nothing finished redone
    final = rows(run_dir)
    assert all(row["status"] == "ok" and row["attempts"] == 1 for row in final)

    straight = tmp_path / "straight"
    run_experiment(config, run_dir=straight, backend=backend(Recorder()))
    assert results(run_dir) == results(straight)
    assert len(results(straight)) == TOTAL

    # a second resume of a finished run calls nothing
    idle = backend(Recorder())
    run_experiment(config, run_dir=run_dir, resume=True, backend=idle)
    assert idle.calls == 0
    assert results(run_dir) == results(straight)


def vellmoor(request: GenerateRequest) -> bool:
    return "Vellmoor" in request.messages[-1]["content"].split("Question:")[-1]


def test_errors_are_recorded_never_scored_and_retried_on_resume(
    config: ExperimentConfig, tmp_path: Path
) -> None:
    plan = plan_for(config)
    failing = {item.item_id for item in plan.items if "Vellmoor" in item.case.question}
    assert 0 < len(failing) < TOTAL

    run_dir = tmp_path / "errors"
    run_experiment(config, run_dir=run_dir, backend=backend(Recorder(fail_if=vellmoor)))
    stored = rows(run_dir)
    errors = [row for row in stored if row["status"] == "error"]
    assert {row["item_id"] for row in errors} == failing
    for row in errors:
        assert row["outcome"] == "error"
        assert row["error"] == "RuntimeError: engine exploded"
    assert not any(row["outcome"] == "error" for row in stored if row["status"] == "ok")
    assert all(
        row["outcome"] in {"correct", "incorrect", "abstained"} for row in stored if row["status"] == "ok"
    )

    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["errors"] == len(failing)
    assert summary["items"]["total"] == TOTAL
    assert summary["items"]["done"] == TOTAL - len(failing)
    assert sum(cell["errors"] for cell in summary["cells"]) == sum(1 for row in errors if not row["control"])
    mixed = 0
    for cell in summary["cells"]:
        in_cell = [
            row
            for row in stored
            if not row["control"]
            and row["task"] == cell["task"]
            and row["length_target"] == cell["length"]
            and row["depth"] == cell["depth"]
        ]
        assert cell["n"] == len(in_cell)
        scored = [row for row in in_cell if row["status"] == "ok"]
        assert cell["errors"] == len(in_cell) - len(scored)
        assert cell["incorrect"] == sum(row["outcome"] == "incorrect" for row in scored)
        if scored:
            correct = sum(row["outcome"] == "correct" for row in scored)
            # errors are excluded from the denominator, never counted as wrong
            assert cell["accuracy"] == pytest.approx(correct / len(scored))
            mixed += cell["errors"] > 0
        else:
            assert cell["accuracy"] is None
    assert mixed > 0, "some cell holds both errors and scored rows"

    retry = Recorder()
    retry_backend = backend(retry)
    run_experiment(config, run_dir=run_dir, resume=True, backend=retry_backend)
    by_prompt = ids_by_prompt(plan)
    assert sorted(by_prompt[ids] for ids in retry.seen) == sorted(failing)
    after = rows(run_dir)
    assert all(row["status"] == "ok" for row in after)
    for row in after:
        assert row["attempts"] == (2 if row["item_id"] in failing else 1)
        if row["item_id"] in failing:
            assert row["outcome"] != "error"
    assert load_summary(run_dir).model_dump()["items"]["errors"] == 0

    straight = tmp_path / "straight"
    run_experiment(config, run_dir=straight, backend=backend(Recorder()))
    assert results(run_dir) == results(straight)


def test_item_ids_are_stable_across_plans(config: ExperimentConfig) -> None:
    one = [item.item_id for item in plan_for(config).items]
    two = [item.item_id for item in plan_for(config).items]
    assert one == two
    assert len(set(one)) == len(one) == TOTAL


def test_item_ids_change_with_trial_and_prompt(config: ExperimentConfig) -> None:
    twice = plan_for(config.model_copy(update={"trials": 2}))
    by_trial: dict[tuple[str, int, float], dict[int, str]] = {}
    for item in twice.items:
        key = (item.case.case_id, item.layout.length_tokens, item.layout.depth)
        by_trial.setdefault(key, {})[item.trial] = item.item_id
    assert len(by_trial) == TOTAL
    for ids in by_trial.values():
        assert set(ids) == {0, 1} and ids[0] != ids[1]
    # trial 0 of a two-trial plan is the very item of the one-trial plan
    single = plan_for(config)
    assert {ids[0] for ids in by_trial.values()} == {item.item_id for item in single.items}

    # another length: other prompts, other ids; an identical prompt in the same cell keeps its id
    longer = plan_for(config.model_copy(update={"lengths": [200, 400]}))
    known = {(i.case.case_id, i.layout, i.prompt.token_ids): i.item_id for i in single.items}
    shared = 0
    for item in longer.items:
        same = known.get((item.case.case_id, item.layout, item.prompt.token_ids))
        if item.layout.length_tokens == 400:
            assert same is None and item.item_id not in known.values()
        elif same is not None:
            assert item.item_id == same
            shared += 1
        else:
            assert item.item_id not in known.values()
    assert shared > 0

    # the same hash inputs with one prompt token changed, or another trial, give another id
    item = plan_for(config).items[0]
    key = {"backend": "fake", "model": MODEL, "model_digest": None, "tokenizer_digest": None}
    base = item_id(key, item.prompt.token_ids, item.params, item.case, item.layout, item.trial)
    assert base == item.item_id
    changed = (*item.prompt.token_ids[:-1], item.prompt.token_ids[-1] + 1)
    assert item_id(key, changed, item.params, item.case, item.layout, item.trial) != base
    assert item_id(key, item.prompt.token_ids, item.params, item.case, item.layout, 1) != base
    assert (
        item_id({**key, "model": "fake/other"}, item.prompt.token_ids, item.params, item.case, item.layout, 0)
        != base
    )
