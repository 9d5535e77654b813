"""The dry run's printout: what a run would send and cost, before any model call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from rotscope.plan.rejections import layout_line, summary_lines

if TYPE_CHECKING:  # a view reads what the dry run made, never runs one
    from rotscope.execution.workflows.dry_run import DryRun, OverheadCheck


def print_dry_run(planned: DryRun, console: Console) -> None:
    """What ``rotscope run --dry-run`` prints: calls, prompts, rejections, tokens, cost, and a local
    engine's time and memory."""
    plan, estimate = planned.plan, planned.estimate
    console.print(
        f"{len(plan.items)} work items, {len({i.prompt.token_ids for i in plan.items})} distinct "
        f"prompts, {len(plan.rejected)} rejected by the verifier; prompt tokens: naive "
        f"{plan.naive_prefill:,}, lower bound {plan.lower_bound:,}; corpus "
        f"{plan.corpus['source']} ({plan.corpus['tokens']:,} tokens"
        f"{_variants(plan.corpus.get('variants', 1))}, digest {plan.corpus['digest']})",
        markup=False,
    )
    cost = "unknown (no price for this model; add it under prices:)"
    if estimate.cost is not None:
        cost = f"${estimate.cost:.4f}"
    if estimate.cost_with_caching is not None:
        written = f"{estimate.cache_write_tokens:,} written and " if estimate.cache_write_tokens else ""
        cost += (
            f" without prompt caching, ${estimate.cost_with_caching:.4f} with it "
            f"({written}{estimate.cache_read_tokens:,} prompt tokens read from the provider's cache, "
            "at list prices, in the grouped order)"
        )
    console.print(
        f"calls: {estimate.calls:,} ({estimate.cached_calls:,} answered by the response cache); prompt "
        f"tokens {estimate.prompt_tokens:,}; output tokens at most {estimate.max_output_tokens:,}; "
        f"estimated cost {cost} for {estimate.model}"
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


def local_estimate_line(planned: DryRun) -> str:
    local = planned.local
    assert local is not None
    memory = f"engine worker peak memory about {local.peak_memory_bytes / 2**20:,.0f} MiB"
    if local.seconds is None or local.prefill_tps is None:
        return f"{memory}; run time unknown: rotscope doctor measures this machine's speed"
    return (
        f"{memory}; model time about {local.seconds:,.0f} s at most "
        f"({planned.plan.lower_bound:,} prompt tokens at {local.prefill_tps:,.0f} tokens/s measured by "
        f"rotscope doctor with {local.threads} threads, plus at most max_tokens per call)"
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
