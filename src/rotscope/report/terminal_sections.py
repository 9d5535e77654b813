"""The terminal's first screen below the heat maps: the cases (evidence-only controls, capability
and positional failures, high-risk rows), the evidence-absent controls, the static-vs-session
filler gaps, reasoning's layout drops, and the frozen plan, the model's own session and the cache
check (``report.terminal`` prints them in its order)."""

from __future__ import annotations

from rich.console import Console

from rotscope.records.cells import Control, FillerGap
from rotscope.records.run import SessionGeneration
from rotscope.records.summary import Summary
from rotscope.records.tasks import Degradation, Interference, LayoutDrop, Reasoning
from rotscope.report.lines import say as _say
from rotscope.report.numbers import score as _fmt


def gap_text(estimate: float | None, entry: Degradation | LayoutDrop) -> str:
    """A paired gap with its interval, or the note that it has too few pairs for one."""
    unmatched_pairs = entry.unmatched if isinstance(entry, Degradation) else None
    unmatched = f" ({unmatched_pairs} unmatched left out)" if unmatched_pairs else ""
    if entry.too_few:
        return f"{_fmt(estimate, True)} on {entry.pairs} pairs (too few pairs for an interval){unmatched}"
    interval = f"[{_fmt(entry.ci_low, True)}, {_fmt(entry.ci_high, True)}]"
    return f"{_fmt(estimate, True)} {interval} on {entry.pairs} pairs{unmatched}"


def _case_list(summary: Summary, ids: list[str]) -> str:
    worst = {entry.case_id: entry.worst for entry in summary.cases}
    shown = []
    for case_id in ids:
        at = worst.get(case_id)
        shown.append(f"{case_id} (worst {at.position} at {at.length:,} tokens)" if at else case_id)
    return ", ".join(shown)


def print_cases(summary: Summary, console: Console) -> None:
    """Evidence-only controls, capability failures apart from positional ones, high-risk rows."""
    for control in summary.evidence_only:
        console.print(
            f"evidence-only control {control.task}: accuracy {_fmt(control.accuracy)} "
            f"(n={control.n}, errors={control.errors}; the evidence alone, no padding)"
        )
    if summary.capability_failures:
        console.print(
            "capability failures (wrong even with the evidence alone): "
            + ", ".join(summary.capability_failures),
            markup=False,
        )
    if summary.positional_failures:
        console.print(
            "positional failures (right with the evidence alone, wrong at some layout): "
            + _case_list(summary, summary.positional_failures),
            markup=False,
        )
    risky = [entry for entry in summary.cases if entry.forbidden_claims]
    if risky:
        console.print(
            f"[bold red]high risk:[/bold red] {summary.high_risk} answers state a forbidden claim, in "
            + ", ".join(entry.case_id for entry in risky)
        )
    for entry in summary.cases:
        if entry.missing_claims or entry.wrong_citations or entry.missing_citations:
            console.print(
                f"  {entry.case_id}: missing claims {entry.missing_claims or '-'}, wrong citations "
                f"{entry.wrong_citations or '-'}, uncited claims {entry.missing_citations or '-'}",
                markup=False,
            )


def filler_share(entry: Interference) -> str:
    """``3 of 7 wrong answers from the filler (43%)``: the share with its denominator, the wrong
    answers that gave a number (one answer is no "100%")."""
    numbered = entry.wrong - entry.unparsed
    matched = entry.filler_answer + entry.filler_number
    if not numbered:
        return "no wrong answer gave a number"
    answers = "wrong answer" if numbered == 1 else "wrong answers"
    return f"{matched} of {numbered} {answers} from the filler ({matched / numbered:.0%})"


def print_reasoning(reasoning: Reasoning, console: Console) -> None:
    """Reasoning's drop from the end layout per length, filler and layout, and where its wrong
    answers came from; each line broken after a clause at the console's width."""
    _say(
        console,
        "  drop from end (end accuracy minus the layout's, paired on the same items, 95% adjusted t):",
    )
    for drop in reasoning.drops:
        _say(
            console,
            f"    length {drop.length:>6,} {drop.filler:<15} {drop.layout:<13} "
            f"end {_fmt(drop.end_accuracy)} vs {_fmt(drop.layout_accuracy)}; drop "
            f"{gap_text(drop.drop, drop)}",
        )
    _say(console, "  wrong answers traced to the filler (share of wrong answers that gave a number):")
    for entry in reasoning.interference:
        _say(
            console,
            f"    {entry.filler:<15} {entry.layout:<13} {entry.wrong:>3} wrong: "
            f"filler answer {entry.filler_answer}, other filler number {entry.filler_number}, "
            f"neither {entry.other}, no 'Answer: <number>' {entry.unparsed} "
            f"-> {filler_share(entry)}",
        )


def _usd(usd: float | None) -> str:
    """A session's cost; ``None`` in a run from before sessions were priced."""
    return "unpriced" if usd is None else f"${usd:.4f}"


def generation_line(generation: SessionGeneration) -> str:
    """What the model's writing of its own session cost (``filler.assistant: model``)."""
    return (
        f"session written by the model: {generation.sessions} session(s) of {generation.turns} turns, "
        f"{generation.calls} calls, prompt tokens {generation.prompt_tokens:,}, completion tokens "
        f"{generation.completion_tokens:,}, {generation.latency_s:.1f} s, "
        f"{_usd(generation.usd)} (not in the token counts above; in the cost)"
    )


def print_plan_and_cache(summary: Summary, console: Console) -> None:
    """The model's own session, the frozen plan's deviations and the cache check, where the run has
    them."""
    if summary.session_generation:
        _say(console, generation_line(summary.session_generation))
    plan = summary.plan
    if plan:
        console.print(f"frozen plan {plan.digest}: {len(plan.deviations)} deviation(s) recorded")
        for deviation in plan.deviations:
            console.print(
                f"  deviation {deviation.field}: plan {deviation.planned!r}, run {deviation.actual!r}",
                markup=False,
            )
    cache = summary.cache_control
    if cache:
        line = (
            f"cache control: {cache.compared} items re-run cold, {cache.differing} replies differ from "
            f"warm; correct warm {cache.warm_correct:g}, cold {cache.cold_correct:g} ({cache.rule})"
        )
        if cache.incident:
            console.print(f"[bold red]RUNTIME CORRECTNESS INCIDENT[/bold red] {line}", highlight=False)
            for example in cache.examples or []:
                console.print(
                    f"  {example.call_id}: warm {example.warm_response!r}, cold {example.cold_response!r}",
                    markup=False,
                )
        else:
            _say(console, line)


def filler_gap_lines(gaps: list[FillerGap]) -> list[str]:
    """The static-vs-session comparison, a line per task and length (pooled first)."""
    if not gaps:
        return []
    # The interval's method names its clusters (analysis.fillers); summaries before issue 48 have none.
    methods = {gap.method for gap in gaps if gap.ci_low is not None and gap.method} or {"adjusted t"}
    method = methods.pop() if len(methods) == 1 else "interval clustered as each line's method says"
    lines = [f"static vs session filler (session minus static, paired on cases, 95% {method}):"]
    for gap in gaps:
        where = "all lengths" if gap.length is None else f"length {gap.length:,}"
        if gap.ci_low is None:
            interval = "too few pairs for an interval"
        else:
            interval = f"[{gap.ci_low:+.2f}, {gap.ci_high:+.2f}]"
        estimate = "n/a" if gap.gap is None else f"{gap.gap:+.2f}"
        lines.append(
            f"  {gap.task:<12} {where:<14} static {_fmt(gap.static_accuracy)} session "
            f"{_fmt(gap.session_accuracy)}: gap {estimate} {interval} on {gap.pairs} cases"
            + (f", {gap.unmatched} unmatched layouts" if gap.unmatched else "")
        )
    return lines


def print_controls(summary: Summary, console: Console) -> None:
    """The evidence-absent controls, a line per task and filler: each length's outcome."""
    grouped: dict[tuple[str, str | None, str], list[Control]] = {}
    for control in summary.controls:
        grouped.setdefault((control.task, control.filler, control.kind or "abstain"), []).append(control)
    for (task, filler, kind), controls in grouped.items():
        where = f" in {filler} filler" if filler else ""
        outcomes = ", ".join(
            f"{control.correct}/{control.n - control.errors - (control.pending or 0)} at {control.length:,}"
            for control in controls
        )
        if kind == "compliance":
            what = f"complied by chance (the base rate without the instruction): {outcomes}"
        else:
            answered = sum(control.hallucinated for control in controls)
            what = f"abstained correctly {outcomes}; {answered} answered anyway"
        _say(console, f"evidence-absent control {task}{where}: {what}")
