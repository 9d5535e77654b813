"""What calls cost: a price table per model, the cost of one call, and the run's budget.

Prices are USD per million tokens. Each remote backend lists a few of its provider's list prices
(``register_backend(prices=...)``, read from ``backends/data/prices.yaml`` with the pricing page and
date of each); they change, so the config's ``prices:`` adds models and overrides these. Cached
reads and cache writes are priced apart, as each price says. Local engines cost nothing; a remote
model without a price has an unknown (``None``) cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from rotscope._util.tokens import common_prefix
from rotscope.backends import listed_prices, prompt_cache
from rotscope.backends.price_table import listed_price
from rotscope.config.experiment import ExperimentConfig, Price
from rotscope.errors import BadInput
from rotscope.execution.calls.response_cache import ResponseCache, cache_key
from rotscope.plan.schedule import group_prefix, prefix_groups
from rotscope.types import Completion

if TYPE_CHECKING:
    from rotscope.plan.workitems import Plan

MILLION = 1_000_000
FREE = Price(input=0.0, output=0.0)


def price_table(config: ExperimentConfig) -> dict[str, Price]:
    """The backends' list prices (``register_backend(prices=...)``), the config's ``prices:`` over them."""
    return {**listed_prices(), **config.prices}


def find_price(model: str, table: Mapping[str, Price], *, local: bool) -> Price | None:
    """The price of ``model`` (``provider/name``); local engines are free unless priced."""
    price = table.get(model)
    if price is None and local:
        return FREE
    return price


def call_cost(
    price: Price, prompt_tokens: int, completion_tokens: int, cached_tokens: int, cache_write_tokens: int = 0
) -> float:
    """USD of one call from its token counts (cached reads and cache writes are part of
    ``prompt_tokens``)."""
    cached = min(cached_tokens, prompt_tokens)
    written = min(cache_write_tokens, prompt_tokens - cached)
    cached_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input if price.cache_write is None else price.cache_write
    return (
        (prompt_tokens - cached - written) * price.input
        + cached * cached_price
        + written * write_price
        + completion_tokens * price.output
    ) / MILLION


def completion_cost(price: Price | None, completion: Completion) -> float | None:
    """What a finished call cost: what the backend reported, else priced from the usage it reported
    (failed calls included); ``None`` when neither is known."""
    if completion.cost is not None:
        return completion.cost
    if price is None:
        return None
    return call_cost(
        price,
        completion.prompt_tokens,
        completion.completion_tokens,
        completion.cached_tokens or 0,  # unknown: priced as uncached, the upper bound
        completion.cache_write_tokens,
    )


def estimate_cost(price: Price | None, prompt_tokens: int, max_tokens: int) -> float | None:
    """Upper estimate before a call: every prompt token uncached, the reply as long as allowed."""
    return None if price is None else call_cost(price, prompt_tokens, max_tokens, 0)


def total_estimate(price: Price | None, calls: Iterable[tuple[int, int]]) -> float | None:
    """``estimate_cost`` summed over ``calls``: each call's (prompt tokens, ``max_tokens``)."""
    if price is None:
        return None
    return sum(call_cost(price, tokens, max_tokens, 0) for tokens, max_tokens in calls)


@dataclass
class Budget:
    """The run's spending limit. A call starts only when what was spent, plus the estimates held
    by calls in flight, plus its own estimate stays within ``max_cost``; the estimate is released
    and the real cost added when it finishes. Costs recorded by earlier passes of the run (before
    a resume) count too."""

    max_cost: float | None
    spent: float = 0.0
    reserved: float = 0.0
    stopped: bool = False

    def reserve(self, estimate: float | None) -> bool:
        if self.max_cost is None:
            return True
        if self.stopped or estimate is None or self.spent + self.reserved + estimate > self.max_cost:
            self.stopped = True
            return False
        self.reserved += estimate
        return True

    def settle(self, estimate: float | None, cost: float | None) -> None:
        if self.max_cost is not None and estimate is not None:
            self.reserved -= estimate
        self.spent += cost or 0.0


def check_budget_price(config: ExperimentConfig, price: Price | None, model: str) -> None:
    """A budget needs a price: without one no call's cost could be bounded."""
    if config.max_cost is not None and price is None:
        raise BadInput(f"max_cost: no price for model {model!r}; add it under prices: in the config")


@dataclass(frozen=True)
class CostEstimate:
    """What a run would send: calls, prompt tokens, the most output tokens, and the estimated cost
    of the calls the response cache cannot answer (``None`` when the model has no price), without
    and with the provider's prompt cache."""

    model: str
    calls: int
    cached_calls: int
    prompt_tokens: int
    max_output_tokens: int
    cost: float | None
    cost_with_caching: float | None = None
    """The same calls with the provider's prompt cache, in the grouped order
    (``prompt_cache_estimate``)."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    prompt_tokens_to_call: int = 0
    """Prompt tokens of the calls the response cache cannot answer (what the provider is sent)."""
    max_output_tokens_to_call: int = 0
    """The reply budgets (``max_tokens``) of those calls, summed."""
    price_origin: str | None = None
    """Where the price came from: ``prices: of the experiment file``, or the listed price's date and
    pricing page (``prices as of DATE, from URL``); ``None`` when unpriced or a free local engine."""
    price_note: str | None = None
    """What the listed price leaves out (a long-context tier), from the price table."""


def price_origin(config: ExperimentConfig, model: str) -> tuple[str | None, str | None]:
    """(origin, note) of ``model``'s price: the experiment file's ``prices:`` first, then the
    listed price with its date and source; ``(None, None)`` when neither prices it."""
    if model in config.prices:
        return "prices: of the experiment file", None
    listed = listed_price(model)
    if listed is None:
        return None, None
    via = f" (read via {listed.read_via})" if listed.read_via else ""
    return f"prices as of {listed.as_of}, from {listed.source}{via}", listed.note


def estimate_plan(
    config: ExperimentConfig, plan: Plan, *, local: bool, cache: ResponseCache | None
) -> CostEstimate:
    """The dry run's numbers: each call's prompt tokens at the input price and its ``max_tokens``
    (its work item's reply budget, as the call is sent) at the output price, summed over the calls
    not already in the response cache."""
    price = find_price(config.model, price_table(config), local=local)
    to_call = [
        index
        for index, item in enumerate(plan.items)
        if cache is None or cache.get(cache_key(plan.backend, item.request(), item.trial)) is None
    ]
    lengths = [plan.items[index].prompt.prompt_tokens for index in to_call]
    budgets = [plan.items[index].params.max_tokens for index in to_call]
    reads, writes = (
        (0, 0)
        if local
        else prompt_cache_estimate([plan.items[i].prompt.token_ids for i in to_call], config.model)
    )
    without = total_estimate(price, zip(lengths, budgets, strict=True))
    with_caching = None
    if (
        not local and price is not None and without is not None
    ):  # the same calls, their shared prefixes cached
        saved = call_cost(price, reads + writes, 0, 0) - call_cost(price, reads + writes, 0, reads, writes)
        with_caching = without - saved
    origin, note = (None, None) if price is None else price_origin(config, config.model)
    return CostEstimate(
        model=config.model,
        calls=len(plan.items),
        cached_calls=len(plan.items) - len(to_call),
        prompt_tokens=sum(item.prompt.prompt_tokens for item in plan.items),
        max_output_tokens=sum(item.params.max_tokens for item in plan.items),
        cost=without,
        cost_with_caching=with_caching,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        prompt_tokens_to_call=sum(lengths),
        max_output_tokens_to_call=sum(budgets),
        price_origin=origin,
        price_note=note,
    )


def prompt_cache_estimate(token_ids: Sequence[Sequence[int]], model: str) -> tuple[int, int]:
    """(read, written) prompt tokens of the calls in the grouped order: from an automatic cache
    (its backend's ``PromptCache.automatic_step``) by ``automatic_cache_reads``, else from
    breakpoints by ``breakpoint_cache_estimate``, each from the provider's shortest cached prefix."""
    cache = prompt_cache(model)
    least = cache.shortest(model.partition("/")[2])
    if cache.automatic_step is None:
        return breakpoint_cache_estimate(token_ids, least)
    return automatic_cache_reads(token_ids, least, cache.automatic_step), 0


def automatic_cache_reads(token_ids: Sequence[Sequence[int]], least: int, step: int) -> int:
    """Prompt tokens an automatic prefix cache serves when each prefix group runs together (the
    grouped order, its ``prompt_cache_key`` routing the group to one cache): every call reads the
    longest prefix it shares with an earlier call of its group, which in the group's trie order is
    the call just before it, counted down to a multiple of ``step`` and only from ``least`` tokens
    on. A group's first call reads nothing (another group's prefixes may sit in another cache);
    writes cost nothing extra on these providers, so none are counted."""
    reads = 0
    for group in prefix_groups(token_ids):
        for before, after in pairwise(group):
            shared = common_prefix(token_ids[before], token_ids[after])
            if shared >= least:
                reads += shared - shared % step
    return reads


def breakpoint_cache_estimate(token_ids: Sequence[Sequence[int]], least: int) -> tuple[int, int]:
    """(read, written) prompt tokens of the Anthropic backend's breakpoints in the grouped order:
    each call marks the run's stem and the prefixes it shares with the calls before and after it
    in its group (``cache_breakpoints``), those of at least ``least`` tokens. A call reads its
    longest marked prefix some earlier call wrote, and writes from there to its longest marked
    prefix when that one is new; whatever it marked is cached from then on. It assumes each call
    finishes before the next of its group starts (concurrency 1 per group): calls in flight together
    both pay to write what they share, so at higher concurrency the saving is smaller."""
    if not token_ids:
        return 0, 0
    stem = group_prefix(token_ids, range(len(token_ids)))
    cached: set[tuple[int, int]] = set()  # (length, hash) of each prefix written
    reads = writes = 0
    for group in prefix_groups(token_ids):
        shared = [common_prefix(token_ids[a], token_ids[b]) for a, b in pairwise(group)]
        for position, index in enumerate(group):
            neighbours = shared[max(position - 1, 0) : position + 1]
            marks = sorted({length for length in (stem, *neighbours) if length >= least})
            if not marks:
                continue
            prefixes = [(length, hash(tuple(token_ids[index][:length]))) for length in marks]
            read = max((prefix[0] for prefix in prefixes if prefix in cached), default=0)
            reads += read
            writes += marks[-1] - read
            cached.update(prefixes)
    return reads, writes
