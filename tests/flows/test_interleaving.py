"""Remote APIs run work items in a seeded random interleaving across cells, tasks and controls,
so provider drift over time cannot pass for a position or length effect."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from statsmodels.sandbox.stats.runs import runstest_1samp

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import execution_order, run_experiment
from rotscope.plan.workitems import build_plan
from rotscope.types import GenerateRequest, WorkItem

REMOTE = "remotefake"
ALPHA = 0.001


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, prose: Callable[..., str]) -> ExperimentConfig:
    corpus = tmp_path_factory.mktemp("corpus")
    for number in range(3):
        (corpus / f"doc{number}.txt").write_text(prose(80, seed=number), encoding="utf-8")
    return build_config(
        {
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "limit": 3,
            "lengths": [200, 300],
            "depths": [0.0, 0.5, 1.0],
            "trials": 2,
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "cache": {"enabled": False},
            "order": "interleaved",
        }
    )


@pytest.fixture(scope="module")
def items(config: ExperimentConfig) -> list[WorkItem]:
    plan = build_plan(config, FakeBackend("lexical", lexical_responder()))
    # Up to 72 probes then 24 controls, in plan order (a few placements may be rejected).
    assert len(plan.items) >= 80
    return plan.items


ATTRIBUTES: dict[str, Callable[[WorkItem], bool]] = {
    "task": lambda item: item.case.task == "niah",
    "control": lambda item: item.case.control,
    "length": lambda item: item.layout.length_tokens == 300,
    "depth": lambda item: item.layout.depth == 1.0,
    "trial": lambda item: item.trial == 1,
}


def runs_p_value(order: list[WorkItem], attribute: Callable[[WorkItem], bool]) -> float:
    """Wald-Wolfowitz runs test: small when like items come in blocks (or strictly alternate)."""
    _, p_value = runstest_1samp(np.array([int(attribute(item)) for item in order]), cutoff=0.5)
    return float(p_value)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_remote_order_shows_no_blocks_of_any_attribute(items: list[WorkItem], seed: int) -> None:
    order = execution_order(items, False, seed).items
    assert sorted(item.item_id for item in order) == sorted(item.item_id for item in items)
    for name, attribute in ATTRIBUTES.items():
        assert runs_p_value(order, attribute) > ALPHA, name


def test_the_runs_test_catches_blocked_orders(items: list[WorkItem]) -> None:
    # The plan's own order and the local prefix order come in blocks; the test must see it.
    for order in (items, execution_order(items, True, 0).items):
        assert min(runs_p_value(order, attribute) for attribute in ATTRIBUTES.values()) < ALPHA


def test_every_quarter_of_the_run_mixes_tasks_controls_lengths_and_depths(items: list[WorkItem]) -> None:
    order = execution_order(items, False, 0).items
    quarter = len(order) // 4
    for start in range(0, 4 * quarter, quarter):
        chunk = order[start : start + quarter]
        assert {item.case.task for item in chunk} == {"niah", "nolima"}
        assert {item.case.control for item in chunk} == {True, False}
        assert {item.layout.length_tokens for item in chunk} == {200, 300}
        assert {item.layout.depth for item in chunk if not item.case.control} == {0.0, 0.5, 1.0}


def test_order_is_fixed_by_the_seed(items: list[WorkItem]) -> None:
    ids = [item.item_id for item in execution_order(items, False, 7).items]
    assert ids == [item.item_id for item in execution_order(items, False, 7).items]
    assert ids != [item.item_id for item in execution_order(items, False, 8).items]


def test_runner_sends_remote_calls_in_the_interleaved_order(
    config: ExperimentConfig, items: list[WorkItem], tmp_path: Path
) -> None:
    seen: list[tuple[int, ...]] = []
    respond = lexical_responder()

    def recording(request: GenerateRequest) -> str:
        seen.append(request.token_ids)
        return respond(request)

    one_at_a_time = build_config({**config.model_dump(), "limits": {REMOTE: {"concurrency": 1}}})
    backend = FakeBackend("lexical", recording, provider=REMOTE)
    run_experiment(one_at_a_time, run_dir=tmp_path / "run", backend=backend)
    expected = [
        item.prompt.token_ids for item in execution_order(items, False, config.seed, config.order).items
    ]
    assert seen == expected
