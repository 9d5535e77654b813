"""The dry run's printout: what a run would send and cost, before any model call."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from rich.console import Console

from rotscope.plan.rejections import layout_line, summary_lines
from rotscope.report.placement import placement_lines

if TYPE_CHECKING:  # a view reads what the dry run made, never runs one
    from rotscope.execution.workflows.dry_run import DryRun, OverheadCheck, WallTime


def print_dry_run(planned: DryRun, console: Console) -> None:
    """What ``rotscope run --dry-run`` prints: calls, prompts, rejections, tokens (each estimate
    labelled, with the tokenizer that counted it), cost with the price's date and source, a remote
    run's time from its rate limits, and a local engine's time and memory."""
    plan, estimate = planned.plan, planned.estimate
    count = _counter(planned)
    console.print(
        f"{len(plan.items)} work items, {len({i.prompt.token_ids for i in plan.items})} distinct "
        f"prompts, {len(plan.rejected)} rejected by the verifier; prompt tokens: naive "
        f"{count(plan.naive_prefill)}, lower bound {count(plan.lower_bound)}; corpus "
        f"{plan.corpus['source']} ({plan.corpus['tokens']:,} tokens"
        f"{_variants(plan.corpus.get('variants', 1))}, digest {plan.corpus['digest']})",
        markup=False,
    )
    console.print(token_count_line(planned), markup=False, soft_wrap=True)
    cost = "unknown (no price for this model; see below)"
    if estimate.cost is not None:
        cost = f"${estimate.cost:.4f}"
    if estimate.cost_with_caching is not None:
        written = f"{estimate.cache_write_tokens:,} written and " if estimate.cache_write_tokens else ""
        cost += (
            f" without prompt caching, ${estimate.cost_with_caching:.4f} with it "
            f"({written}{estimate.cache_read_tokens:,} prompt tokens read from the provider's cache, "
            "at list prices, in the grouped order)"
        )
    bound = " (an upper estimate: every reply as long as max_tokens)" if estimate.cost else ""
    console.print(
        f"calls: {estimate.calls:,} ({estimate.cached_calls:,} answered by the response cache); prompt "
        f"tokens {count(estimate.prompt_tokens)}; output tokens at most {estimate.max_output_tokens:,}; "
        f"estimated cost {cost} for {estimate.model}{bound}"
        + (
            f"; judge calls ({planned.judge_model}) come on top, one per undecided reply"
            if planned.judge_model
            else ""
        )
        + (
            "; the calls that write the model's own session (filler.assistant: model) come on top, "
            "one per note"
            if planned.self_written
            else ""
        ),
        markup=False,
    )
    for line in price_lines(planned):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if planned.wall_time is not None:
        console.print(wall_time_line(planned.wall_time), markup=False, soft_wrap=True)
    if planned.local is not None:
        console.print(local_estimate_line(planned), markup=False)
    if planned.overhead is not None:
        console.print(
            overhead_line(planned.overhead),
            style="bold yellow" if planned.overhead.too_long else None,
            markup=False,
            soft_wrap=True,
        )
    measured = {(item.case.task, item.case.case_id) for item in plan.items if not item.case.control}
    for line in summary_lines(plan.rejections, measured):
        console.print(line, markup=False, soft_wrap=True)
    for rejection in plan.rejections if plan.rejections else ():
        console.print(f"  {layout_line(rejection)}", markup=False, soft_wrap=True)
    for line in placement_lines(plan.items):  # before the first call: a size that cannot place a length
        console.print(line, markup=False, soft_wrap=True)


def pair_total_line(dry_runs: Mapping[str, DryRun]) -> str:
    """A paired session's dry run in one line: both subjects' calls and cost together."""
    estimates = [planned.estimate for planned in dry_runs.values()]
    calls = " + ".join(f"{estimate.calls:,}" for estimate in estimates)
    costs = [estimate.cost for estimate in estimates]
    cost = "unknown (a subject has no price)" if None in costs else f"${sum(c or 0.0 for c in costs):.4f}"
    return (
        f"paired session: {sum(e.calls for e in estimates):,} calls in all ({calls}, interleaved in "
        f"one session); estimated cost {cost}"
    )


def models_total_line(dry_runs: Mapping[str, DryRun]) -> str:
    """A --models session's dry run in one line: every subject's calls, tokens and cost together."""
    estimates = [planned.estimate for planned in dry_runs.values()]
    costs = [estimate.cost for estimate in estimates]
    cost = "unknown (a subject has no price)" if None in costs else f"${sum(c or 0.0 for c in costs):.4f}"
    return (
        f"session of {len(estimates)} subjects: {sum(e.calls for e in estimates):,} calls, "
        f"{sum(e.prompt_tokens for e in estimates):,} prompt tokens in all, interleaved in one session; "
        f"estimated cost {cost}"
    )


def _counter(planned: DryRun) -> Callable[[int], str]:
    """A token count as printed: ``≈ N`` when the counts are estimates."""
    mark = "≈ " if planned.token_counts.approximate else ""
    return lambda tokens: f"{mark}{tokens:,}"


def token_count_line(planned: DryRun) -> str:
    """How the prompt tokens were counted: exactly by the model's tokenizer, or estimated (by
    which estimate, and the setting that would make them exact)."""
    counts, tokens = planned.token_counts, planned.estimate.prompt_tokens
    name = counts.tokenizer or "unknown"
    if counts.approximate:
        how = "regex" if "regex" in name else name
        return (
            f"token counts: ≈ {tokens:,} prompt tokens (estimated by {how}; set {counts.option} "
            "for exact counts)"
        )
    return f"token counts: {tokens:,} prompt tokens, exact (counted by {name})"


def price_lines(planned: DryRun) -> list[str]:
    """Where the price came from (its date and pricing page), or how to add one."""
    estimate = planned.estimate
    if estimate.cost is None:
        return [
            f"no price for {estimate.model}: add one under prices: in the experiment file "
            "(USD per million tokens, from the provider's pricing page), e.g. with example numbers:",
            "  prices:",
            f"    {estimate.model}: {{input: 2.00, output: 8.00, cached_input: 0.50}}",
        ]
    if estimate.price_origin is None:
        return []
    lines = [f"price: {estimate.price_origin}"]
    if estimate.price_note:
        lines.append(f"price note: {estimate.price_note}")
    return lines


def wall_time_line(timing: WallTime) -> str:
    """A remote run's time from its provider's rate limits, labelled an estimate."""
    limits, provider = timing.limits, timing.provider
    rates = (
        f"{_rate(limits.requests_per_minute)} requests/min, {_rate(limits.tokens_per_minute)} tokens/min "
        f"(limits.{provider}), concurrency {limits.concurrency}"
    )
    if timing.minutes is None:
        return (
            f"wall time: unknown, no rate limit is configured ({rates}); set "
            f"limits.{provider}.requests_per_minute and tokens_per_minute to your account's limits "
            "for an estimate"
        )
    minutes = "under 1 min" if timing.minutes < 1 else f"{math.ceil(timing.minutes):,} min"
    return (
        f"wall time: ≈ {minutes} at {rates}: an estimate from the rate limits for {timing.calls:,} "
        f"calls and {timing.charged_tokens:,} tokens charged (prompt plus max_tokens); the "
        "provider's latency can make it longer"
    )


def _rate(value: float | None) -> str:
    return "unlimited" if value is None else f"{value:,g}"


def local_estimate_line(planned: DryRun) -> str:
    local = planned.local
    assert local is not None
    memory = f"engine worker peak memory about {local.peak_memory_bytes / 2**20:,.0f} MiB"
    if local.seconds is None or local.prefill_tps is None:
        return f"{memory}; run time unknown: rotscope doctor measures this machine's speed"
    # doctor times short prompts; attention makes each token of a long prompt dearer, so this is an
    # estimate, not a bound (benchmarks/results/studies.md compares it with measured runs)
    return (
        f"{memory}; model time about {local.seconds:,.0f} s "
        f"({planned.plan.lower_bound:,} prompt tokens at {local.prefill_tps:,.0f} tokens/s measured by "
        f"rotscope doctor with {local.threads} threads on short prompts, plus at most max_tokens per call; "
        "prompts of thousands of tokens evaluate slower)"
    )


def overhead_line(check: OverheadCheck) -> str:
    """The harness overhead an earlier run measured, and a warning for lengths it pushes past the window."""
    if check.tokens is None:
        return (
            f"harness overhead of {check.model}: not measured yet (a run's first call measures it "
            "when the command reports usage; the next dry run checks it against the window)"
        )
    line = f"harness overhead of {check.model}: {check.tokens:,} tokens (first call of its latest run)"
    if check.window is None:
        return line + "; set cmd.context_window to check the planned lengths against the window"
    if not check.too_long:
        return line + f"; every planned length fits the window of {check.window:,} tokens with it"
    lengths = ", ".join(f"{length:,} ({total:,} tokens)" for length, total in check.too_long)
    return (
        f"warning: {line}; with it and max_tokens these planned lengths exceed the window of "
        f"{check.window:,} tokens: {lengths}"
    )


def _variants(count: int) -> str:
    return f" in {count} haystack variants" if count > 1 else ""
