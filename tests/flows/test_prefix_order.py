"""Remote call orders (``order: interleaved | grouped | prefix``): prefix groups are subtrees of the
prompts' token trie, the grouped order keeps each group together and stays within its bound of the
trie lower bound on a cache holding the last prompt, every remote call is told its group, and the
run's metadata and views say which order ran."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from rich.console import Console

from rotscope._util.tokens import common_prefix
from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.calls.order import execution_order, word_boundary
from rotscope.execution.workflows.runner import run_experiment
from rotscope.plan.schedule import (
    GROUP_SLACK,
    cache_evaluated,
    group_prefix,
    grouped_order,
    prefill_bounds,
    prefix_groups,
    prefix_order,
    shuffled_order,
)
from rotscope.plan.workitems import build_plan
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.types import GenerateRequest, WorkItem
from tests.support.cli_helpers import assert_bad_input, invoke

REMOTE = "remotefake"


def trie_like_prompts(seed: int) -> list[tuple[int, ...]]:
    """Prompts in the shape of a grid: a shared header, one filler per length cut short, and a
    needle (per case) spliced in at a depth; some prompts repeated (trials)."""
    rng = random.Random(seed)
    header = tuple(range(1000, 1020))
    filler = tuple(rng.randrange(100) for _ in range(600))
    prompts = []
    for length in (150, 300, 600):
        for depth in (0.0, 0.5, 1.0):
            for case in range(3):
                at = int(depth * length)
                needle = (5000 + case, 5100 + case, 5200 + case)
                prompts.append(header + filler[:at] + needle + filler[at:length] + (9, case))
    return prompts + prompts[:4]


@pytest.mark.parametrize("seed", range(5))
def test_groups_are_subtrees_and_the_grouped_order_stays_within_its_bound(seed: int) -> None:
    prompts = trie_like_prompts(seed)
    groups = prefix_groups(prompts)
    assert sorted(i for group in groups for i in group) == list(range(len(prompts)))
    assert [i for group in groups for i in group] == prefix_order(prompts)  # runs of the trie order
    assert len(groups) > 3
    for group in groups:  # a subtree: no outsider shares the group's whole prefix
        shared = group_prefix(prompts, group)
        outsiders = set(range(len(prompts))) - set(group)
        assert (
            all(common_prefix(prompts[i], prompts[group[0]]) < shared for i in outsiders) or len(group) == 1
        )
    _, lower = prefill_bounds(prompts)
    assert cache_evaluated(prompts, prefix_order(prompts)) == lower
    for order_seed in range(10):
        grouped = cache_evaluated(prompts, grouped_order(groups, order_seed))
        assert grouped <= (1 + GROUP_SLACK) * lower
    interleaved = [cache_evaluated(prompts, shuffled_order(len(prompts), s)) for s in range(10)]
    assert min(interleaved) > (1 + GROUP_SLACK) * lower  # what grouping saves here


def test_grouped_order_keeps_each_group_together_in_seeded_order() -> None:
    groups = prefix_groups(trie_like_prompts(0))
    order = grouped_order(groups, 3)
    assert order == grouped_order(groups, 3) != grouped_order(groups, 4)
    starts = [order.index(group[0]) for group in groups]
    for group, start in zip(groups, starts, strict=True):
        assert order[start : start + len(group)] == group
    assert starts != sorted(starts)  # the groups themselves are shuffled


def test_no_slack_gives_one_group_per_free_cut() -> None:
    prompts = trie_like_prompts(1)
    stem = min(common_prefix(a, b) for a in prompts for b in prompts)
    for group in prefix_groups(prompts, slack=0.0):  # only cuts at the stem cost nothing
        others = [i for i in range(len(prompts)) if i not in group]
        assert all(common_prefix(prompts[group[0]], prompts[i]) == stem for i in others)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, prose: Callable[..., str]) -> ExperimentConfig:
    corpus = tmp_path_factory.mktemp("corpus")
    for number in range(3):
        (corpus / f"doc{number}.txt").write_text(prose(80, seed=number), encoding="utf-8")
    return build_config(
        {
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "limit": 2,
            "lengths": [200, 300],
            "depths": [0.0, 0.5, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "cache": {"enabled": False},
            "limits": {REMOTE: {"concurrency": 1}},
        }
    )


@pytest.fixture(scope="module")
def items(config: ExperimentConfig) -> list[WorkItem]:
    return build_plan(config, FakeBackend("lexical", lexical_responder())).items


def test_every_remote_call_is_told_its_group(items: list[WorkItem]) -> None:
    order = execution_order(items, False, 0, "grouped")
    assert sorted(item.item_id for item in order.items) == sorted(item.item_id for item in items)
    by_key: dict[str, list[WorkItem]] = {}
    for item in order.items:
        assert item.prefix_group is not None and item.request().prefix_group == item.prefix_group
        by_key.setdefault(item.prefix_group.key, []).append(item)
    assert len(by_key) == order.groups > 1
    assert max(len(group) for group in by_key.values()) == order.largest_group
    for group in by_key.values():
        hint = group[0].prefix_group
        assert hint is not None
        assert all(
            item.prompt.token_ids[: hint.shared_tokens] == group[0].prompt.token_ids[: hint.shared_tokens]
            for item in group
        )
        # In the group's trie order, each call's ``next`` prefix is its successor's ``previous``:
        # the same tokens and the same text, cut where a run of whitespace starts after a word.
        members = sorted(group, key=lambda item: item.prompt.token_ids)
        first, last = members[0].prefix_group, members[-1].prefix_group
        assert first is not None and first.previous_tokens == 0
        assert last is not None and last.next_tokens == 0
        for before, after in pairwise(members):
            ahead, behind = before.prefix_group, after.prefix_group
            assert ahead is not None and behind is not None
            assert ahead.next_tokens == behind.previous_tokens > 0
            assert ahead.next_chars == behind.previous_chars
            cut = ahead.next_chars
            texts = before.prompt.messages[-1]["content"], after.prompt.messages[-1]["content"]
            assert texts[0][:cut] == texts[1][:cut]
            if texts[0] != texts[1]:
                assert cut > 0 and texts[0][cut].isspace() and not texts[0][cut - 1].isspace()
    assert all(item.prefix_group is None for item in execution_order(items, True, 0, "grouped").items)


def test_a_breakpoint_is_cut_back_to_where_whitespace_follows_a_word() -> None:
    assert word_boundary("the secret code is 48") == len("the secret code is")
    assert word_boundary("line one\n\nline tw") == len("line one\n\nline")
    assert word_boundary("end of it.\n\n") == len("end of it.")
    assert word_boundary("noboundary") == 0


def test_prefix_order_is_the_trie_and_interleaved_the_shuffle(items: list[WorkItem]) -> None:
    ids = [item.prompt.token_ids for item in items]
    assert [item.prompt.token_ids for item in execution_order(items, False, 0, "prefix").items] == sorted(ids)
    shuffled = execution_order(items, False, 5, "interleaved").items
    assert [item.item_id for item in shuffled] == [items[i].item_id for i in shuffled_order(len(items), 5)]


@pytest.mark.parametrize("order", ["grouped", "prefix", "interleaved"])
def test_the_run_sends_that_order_and_says_which_ran(
    config: ExperimentConfig, items: list[WorkItem], order: str, tmp_path: Path
) -> None:
    seen: list[tuple[int, ...]] = []
    respond = lexical_responder()

    def recording(request: GenerateRequest) -> str:
        seen.append(request.token_ids)
        return respond(request)

    run_dir = run_experiment(
        build_config({**config.model_dump(), "order": order}),
        run_dir=tmp_path / "run",
        backend=FakeBackend("lexical", recording, provider=REMOTE),
    )
    planned = execution_order(items, False, config.seed, order)
    assert seen == [item.prompt.token_ids for item in planned.items]
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    assert summary["execution"]["order"] == planned.describe()
    assert summary["execution"]["order"].startswith(order)
    console = Console(width=200, record=True)
    print_summary(typed, console)
    assert "drift" in console.export_text() and "drift" in render_report(run_dir)
    with sqlite3.connect(run_dir / "run.db") as db:
        (stored,) = db.execute("SELECT value FROM meta WHERE key = 'order'").fetchone()
    assert json.loads(stored) == planned.describe()


def test_a_local_run_is_in_trie_order_whatever_the_config_says(
    config: ExperimentConfig, tmp_path: Path
) -> None:
    run_dir = run_experiment(
        build_config({**config.model_dump(), "order": "interleaved"}), run_dir=tmp_path / "run"
    )
    assert load_summary(run_dir).model_dump()["execution"]["order"] == "prefix trie"


def test_an_unknown_order_is_bad_input(tmp_path: Path) -> None:
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("tasks: [niah]\nlengths: [200]\norder: random\n", encoding="utf-8")
    line = assert_bad_input(invoke("run", experiment, "--dry-run"), "order")
    assert "interleaved" in line
