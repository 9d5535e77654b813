"""Reply budgets per answer kind: with ``generation.max_tokens`` unset each call reaches the backend
with its item's answer kind's budget (a needle's phrase 32, a variable chain's set 96), a user's
budget is every call's, the dry run's output bound sums the same budgets, and the manifest names
them per kind only where they differ from the one budget plans had before."""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.dry_run import dry_run
from rotscope.execution.workflows.runner import run_experiment
from rotscope.types import GenerateRequest

LEXICAL = lexical_responder()


def _config(**generation: Any) -> Any:
    return build_config(
        {
            "name": "budgets",
            "model": "fake/lexical",
            "tasks": ["niah", "variable_tracking"],
            "lengths": [400],
            "depths": [0.5],
            "limit": 2,
            "controls": False,  # an evidence-absent control asks for an abstention: a phrase
            "generation": generation,
        }
    )


def _sent(tmp_path: Path, name: str, **generation: Any) -> Counter[tuple[str, int]]:
    """(task, max_tokens) of every request the backend received, each request's task read from the
    dry run's plan of the same config by its prompt."""
    config = _config(**generation)
    task_of = {item.prompt.text: item.case.task for item in dry_run(config).plan.items}
    sent: Counter[tuple[str, int]] = Counter()

    def answer(request: GenerateRequest) -> str:
        text = next(prompt for prompt in task_of if request.messages[-1]["content"] in prompt)
        sent[(task_of[text], request.params.max_tokens)] += 1
        return LEXICAL(request)

    run_dir = run_experiment(config, run_dir=tmp_path / name, backend=FakeBackend("lexical", answer))
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM items").fetchone()
    assert sum(sent.values()) == rows == len(task_of) >= 4
    return sent


def test_each_call_reaches_the_backend_with_its_answer_kinds_budget(tmp_path: Path) -> None:
    sent = _sent(tmp_path, "per-kind")
    assert {budget for (task, budget) in sent if task == "niah"} == {32}
    assert {budget for (task, budget) in sent if task == "variable_tracking"} == {96}
    given = _sent(tmp_path, "given", max_tokens=40)
    assert {budget for _, budget in given} == {40}  # a user's budget is every call's
    assert sum(given.values()) == sum(sent.values())


def test_the_dry_run_and_the_manifest_read_the_same_budgets() -> None:
    config = _config()
    planned = dry_run(config)
    budgets = [item.params.max_tokens for item in planned.plan.items]
    assert sorted(set(budgets)) == [32, 96]
    assert planned.estimate.max_output_tokens == sum(budgets)
    set_budget = dry_run(_config(max_tokens=40))
    assert set_budget.estimate.max_output_tokens == 40 * len(set_budget.plan.items)
