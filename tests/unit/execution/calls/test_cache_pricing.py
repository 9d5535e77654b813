"""Prompt-cache pricing: cached reads and cache writes are priced apart from input tokens, and the
dry run estimates a remote run's cost with and without the provider's prompt cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from rotscope.backends import listed_prices
from rotscope.config.experiment import Price, build_config
from rotscope.execution.calls.cost import (
    MILLION,
    call_cost,
    completion_cost,
    prompt_cache_estimate,
)
from rotscope.execution.workflows.dry_run import dry_run
from rotscope.plan.schedule import group_prefix, prefix_groups
from rotscope.report.dry_run import print_dry_run
from rotscope.types import Completion
from tests.support.cli_helpers import nonsense_corpus

PRICE = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)


def test_reads_and_writes_are_priced_apart() -> None:
    # 10,000 prompt tokens: 6,000 read from the cache, 3,000 written to it, 1,000 plain input.
    expected = (1_000 * 3.0 + 6_000 * 0.3 + 3_000 * 3.75 + 100 * 15.0) / MILLION
    assert call_cost(PRICE, 10_000, 100, 6_000, 3_000) == pytest.approx(expected)
    completion = Completion(
        "x", prompt_tokens=10_000, completion_tokens=100, cached_tokens=6_000, cache_write_tokens=3_000
    )
    assert completion_cost(PRICE, completion) == pytest.approx(expected)
    # Unset cache prices are the input price: caching then changes nothing.
    plain = Price(input=3.0, output=15.0)
    assert call_cost(plain, 10_000, 100, 6_000, 3_000) == pytest.approx(call_cost(plain, 10_000, 100, 0))


def test_anthropic_list_prices_bill_writes_above_and_reads_below_input() -> None:
    for model in ("anthropic/claude-sonnet-4-0", "anthropic/claude-3-5-haiku-latest"):
        price = listed_prices()[model]
        assert price.cache_write == pytest.approx(1.25 * price.input)
        assert price.cached_input == pytest.approx(0.1 * price.input)


def test_the_breakpoint_cache_estimate_writes_each_long_group_prefix_once_and_reads_it_after() -> None:
    shared = tuple(range(2000))
    prompts = [(*shared, 9000 + case, 1, 2) for case in range(4)] + [(7,) * 900]
    groups = prefix_groups(prompts)
    long = [group for group in groups if group_prefix(prompts, group) >= 1024]
    assert len(long) == 1 and len(long[0]) == 4
    assert prompt_cache_estimate(prompts, "anthropic/claude-sonnet-4-0") == (3 * 2000, 2000)
    # A stem every prompt shares is written once and read by all the others; each group (two
    # trials of one prompt) writes the rest of its prompt once on top.
    stemmed = [(*shared, 9000 + case, *range(1200), 5, case) for case in range(3) for _ in range(2)]
    assert prompt_cache_estimate(stemmed, "anthropic/claude-sonnet-4-0") == (
        5 * 2000 + 3 * 1203,
        2000 + 3 * 1203,
    )
    # Haiku caches only from 2,048 tokens: the 2,000 shared tokens are not cached there.
    assert prompt_cache_estimate(prompts, "anthropic/claude-3-5-haiku-latest") == (0, 0)


def test_each_call_reads_what_it_shares_with_the_call_before_it_not_only_the_groups_prefix() -> None:
    # Three depths of one needle in one haystack: in trie order the calls share 2,500 and then
    # 2,000 tokens, the group as a whole only 2,000.
    base = tuple(range(4000))
    depths = [(*base[: 2000 + 500 * k], 90000 + k, *base[2000 + 500 * k :]) for k in range(3)]
    prompts = [*depths, (99999,) * 900]
    groups = prefix_groups(prompts)
    assert [2, 1, 0] in groups and group_prefix(prompts, [2, 1, 0]) == 2000
    # The deepest call writes the 2,500 tokens it shares with the next, which reads them; that
    # one marks the 2,000 it shares with the last call, which reads those.
    assert prompt_cache_estimate(prompts, "anthropic/claude-sonnet-4-0") == (2500 + 2000, 2500)


def test_an_automatic_cache_reads_each_calls_longest_prefix_shared_within_its_group_in_steps() -> None:
    shared = tuple(range(2000))
    prompts = [(*shared, 9000 + case, 1, 2) for case in range(4)] + [(7,) * 900]
    # OpenAI: the group's 2nd-4th calls each read the 2,000 shared tokens, counted in steps of 128
    # (1,920); nothing is billed for writing; the short prompt is below 1,024 and reads nothing.
    assert prompt_cache_estimate(prompts, "openai/gpt-4o") == (3 * 1920, 0)
    # Gemini states no step: all 2,000.
    assert prompt_cache_estimate(prompts, "gemini/gemini-2.5-flash") == (3 * 2000, 0)
    # Two trials of each of three prompts that share a 2,000-token stem: each pair is a group
    # (cutting at the stem costs nothing), and each second trial reads its whole 3,203-token
    # prompt but the last partial step; a group's first call reads nothing.
    stemmed = [(*shared, 9000 + case, *range(1200), 5, case) for case in range(3) for _ in range(2)]
    assert sorted(map(sorted, prefix_groups(stemmed))) == [[0, 1], [2, 3], [4, 5]]
    assert prompt_cache_estimate(stemmed, "openai/gpt-4o") == (3 * 3200, 0)


def test_dry_run_shows_the_cost_with_and_without_caching(tmp_path: Path) -> None:
    corpus = nonsense_corpus(tmp_path / "corpus", files=4, lines=400)
    config = build_config(
        {
            "model": "fake-remote/lexical",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [1400],
            "depths": [1.0],
            "controls": False,
            # one haystack, so both cases share it (with variants they would not)
            "filler": {"kind": "text", "glob": str(corpus / "*.txt"), "variants": 1},
            "prices": {"fake-remote/lexical": PRICE.model_dump()},
            "cache": {"enabled": False},
        }
    )
    planned = dry_run(config)
    estimate = planned.estimate
    ids = [item.prompt.token_ids for item in planned.plan.items]
    reads, writes = prompt_cache_estimate(ids, config.model)
    assert reads > 0 and (estimate.cache_read_tokens, estimate.cache_write_tokens) == (reads, writes)
    assert estimate.cost is not None and estimate.cost_with_caching is not None
    saved = (reads * (PRICE.input - 0.3) - writes * (3.75 - PRICE.input)) / MILLION
    assert estimate.cost - estimate.cost_with_caching == pytest.approx(saved)
    console = Console(width=400, record=True)
    print_dry_run(planned, console)
    text = console.export_text()
    assert f"${estimate.cost:.4f} without prompt caching, ${estimate.cost_with_caching:.4f} with it" in text
    assert f"{writes:,} written and {reads:,} prompt tokens read from the provider's cache" in text
