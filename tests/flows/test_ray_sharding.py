"""The Ray executor's sharding (no Ray needed): whole prefix groups dealt to workers by token
weight, each shard in trie order, the prefill of all shards near the trie's lower bound; and the
executor's refusals, each one line and exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.executors.ray_executor import shard
from rotscope.plan.schedule import cache_evaluated, prefill_bounds, prefix_groups, prefix_order
from rotscope.plan.workitems import build_plan
from rotscope.types import WorkItem
from tests.support.cli_helpers import assert_bad_input, invoke


def grid(corpus: Path, **changes: object) -> dict[str, object]:
    return {
        "name": "ray-shards",
        "model": "fake/lexical",
        "tasks": ["niah", "nolima"],
        "limit": 3,
        "lengths": [200, 300, 400],
        "depths": [0.0, 0.5, 1.0],
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        **changes,
    }


def planned(config: ExperimentConfig) -> list[WorkItem]:
    return build_plan(config, FakeBackend("lexical", lexical_responder())).items


@pytest.fixture()
def items(corpus: Path) -> list[WorkItem]:
    return planned(build_config(grid(corpus)))


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_shards_hold_every_item_once_as_whole_prefix_groups_in_trie_order(
    items: list[WorkItem], workers: int
) -> None:
    shards = shard(items, workers)
    token_ids = [item.prompt.token_ids for item in items]
    groups = prefix_groups(token_ids)
    assert len(shards) == min(workers, len(groups))
    placed = [item.item_id for part in shards for item in part.items]
    assert sorted(placed) == sorted(item.item_id for item in items)  # every item, once
    where = {item.item_id: number for number, part in enumerate(shards) for item in part.items}
    for group in groups:  # a group never straddles two workers: its shared prefix is evaluated once
        assert len({where[items[i].item_id] for i in group}) == 1
    for part in shards:
        ids = [item.prompt.token_ids for item in part.items]
        assert prefix_order(ids) == list(range(len(ids)))
        assert part.weight == prefill_bounds(ids)[1]
    assert sum(part.groups for part in shards) == len(groups)


def test_shards_are_balanced_by_token_weight(items: list[WorkItem]) -> None:
    token_ids = [item.prompt.token_ids for item in items]
    heaviest_group = max(prefill_bounds([token_ids[i] for i in g])[1] for g in prefix_groups(token_ids))
    for workers in (2, 3):
        weights = [part.weight for part in shard(items, workers)]
        # Heaviest first to the lightest shard: no shard exceeds another by more than one group.
        assert max(weights) - min(weights) <= heaviest_group, weights


def test_the_split_keeps_prefix_sharing_within_a_tenth_of_the_lower_bound(items: list[WorkItem]) -> None:
    """Each worker's cache holds its last prompt: what the workers evaluate together, against the
    least any cache can evaluate for the whole grid."""
    lower = prefill_bounds([item.prompt.token_ids for item in items])[1]
    for workers in (1, 2, 3):
        shards = shard(items, workers)
        evaluated = sum(
            cache_evaluated([i.prompt.token_ids for i in part.items], range(len(part.items)))
            for part in shards
        )
        assert lower <= evaluated <= 1.1 * lower, (workers, evaluated, lower)


def test_no_items_no_shards() -> None:
    assert shard([], 2) == []


def _experiment(tmp_path: Path, corpus: Path, **changes: object) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(grid(corpus, limit=1, lengths=[200], **changes)), encoding="utf-8")
    return path


def test_executor_ray_without_ray_installed_names_the_extra(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    result = invoke("run", _experiment(tmp_path, corpus), "--executor", "ray", "--out", tmp_path / "run")
    assert_bad_input(result, "executor", "pip install rotscope[ray]")
    assert not (tmp_path / "run" / "run.db").exists()


def test_executor_ray_refuses_a_remote_api(tmp_path: Path, corpus: Path) -> None:
    pytest.importorskip("ray")
    experiment = _experiment(tmp_path, corpus, model="fake-remote/lexical")
    result = invoke("run", experiment, "--executor", "ray", "--out", tmp_path / "run")
    assert_bad_input(result, "executor: kind ray runs local engines", "fake-remote/lexical")
    assert not (tmp_path / "run" / "run.db").exists()


def test_resume_takes_no_executor_flag(tmp_path: Path) -> None:
    assert_bad_input(invoke("run", "--resume", tmp_path, "--executor", "ray"), "--executor")


def test_executor_flag_keeps_the_file_s_executor_options(tmp_path: Path, corpus: Path) -> None:
    from rotscope.cli.common import _build

    path = _experiment(tmp_path, corpus, executor={"workers": 3, "gpus_per_worker": 0.5})
    config = _build(path, {}, {"executor": {"kind": "ray"}})
    assert (config.executor.kind, config.executor.workers, config.executor.gpus_per_worker) == ("ray", 3, 0.5)
