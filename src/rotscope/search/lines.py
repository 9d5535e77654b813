"""The lines ``rotscope show`` prints for a search folder (``DIR/search.json``), and what
``rotscope run --search --dry-run`` prints."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rich.console import Console

from rotscope.report.dry_run import print_dry_run
from rotscope.search.record import SearchDecision, SearchRecord

if TYPE_CHECKING:  # a view prints what the dry run made, never runs one
    from rotscope.search.setup import SearchDryRun, WorstCase


def _bound(decision: SearchDecision, side: Literal["lower", "upper"], relative: bool, value: float) -> str:
    """``lower bound 0.86 ≥ 0.85`` (absolute) or ``score 0.91, lower bound of score - 0.85 × base
    +0.02 ≥ 0`` (relative, paired by instance)."""
    bound = decision.lower if side == "lower" else decision.upper
    sign = "≥" if side == "lower" else "<"
    if not relative:
        return f"{side} bound {bound:.2f} {sign} {value:g}"
    return (
        f"score {decision.score:.2f} vs base {decision.base:.2f}, {side} bound of "
        f"score − {value:g} × base {bound:+.3f} {sign} 0"
    )


def search_lines(record: SearchRecord) -> list[str]:
    relative, value = record.definition.relative, record.definition.value
    confidence = f"{record.confidence:.0%}"
    low, high = record.bracket.passes, record.bracket.fails
    passes = record.pass_decision
    fails = record.fail_decision
    parts = []
    if passes is not None:
        parts.append(f"passes at {low:,} ({_bound(passes, 'lower', relative, value)})")
    else:
        parts.append(f"no length from {record.range[0]:,} passes")
    if fails is not None:
        parts.append(f"fails at {high:,} ({_bound(fails, 'upper', relative, value)})")
    else:
        parts.append(f"none up to {record.range[1]:,} fails")
    head = {
        "decided": f"effective length {low:,} tokens"
        if low is not None
        else "effective length below the range",
        "undecided": "UNDECIDED (a length stayed undecided at the instance cap)",
        "inconclusive": "INCONCLUSIVE (budget spent)",
    }[record.verdict]
    # which score the decisions stand on, said where it is not accuracy (as before issue 49)
    on = "" if record.score == "accuracy" else " on the answer's likelihood"
    lines = [f"{head}{on}: {', '.join(parts)}, {confidence}"]
    if record.verdict == "decided" and low is not None and high is None:
        lines[0] = (
            f"effective length at least {low:,} tokens (the range's end){on}: {', '.join(parts)}, "
            f"{confidence}"
        )
    if record.reason:
        lines.append(f"  {record.reason}")
    left_open = _left_open(record)
    if left_open is not None:
        lines.append(left_open)
    lines.append(f"calls {record.calls:,}, prompt tokens {record.prompt_tokens:,}; {_grids(record)}")
    if record.shared_haystacks is not None:
        # The one cluster rule (rotscope.types.clusters) would cluster these instances on their
        # variant; the search's sequences cannot decide on so few clusters, so they stay on the
        # instance and the verdict is conditional on the texts (benchmarks/results/search_families.md).
        lines.append(
            f"  instances shared {record.shared_haystacks} haystack variants: the bounds take each instance "
            f"as its cluster, where the cluster rule would take the {record.shared_haystacks} variants, and "
            "speak for these haystacks, not for the filler source"
        )
    else:
        lines.append("  clustered on the instances (one haystack each)")
    tested = " → ".join(f"{d.length:,}:{d.state}" for d in last_per_step(record.decisions))
    lines.append(f"tested in order: {tested}")
    for shorter, longer in record.non_monotone:
        lines.append(
            f"non-monotone: {longer:,} scores above the failed {shorter:,} beyond noise; "
            "the lengths between were tested"
        )
    lines.append(f"method: {record.method}")
    return lines


def _left_open(record: SearchRecord) -> str | None:
    """For an UNDECIDED search, which lengths stayed open at the cap and with what score: each is
    within noise of the threshold at that many instances, so the bracket is what the cap can place,
    and only a new search with a larger ``search.cap`` (a resumed one keeps its own) narrows it."""
    if record.verdict != "undecided":
        return None
    left = [decision for decision in last_per_step(record.decisions) if decision.state == "open"]
    if not left:
        return None
    cap = f"the cap of {record.cap:,} instances" if record.cap else "the instance cap"
    listed = ", ".join(
        f"{decision.length:,} ({decision.instances:,} instances, score {decision.score:.2f})"
        for decision in left
    )
    return (
        f"  left open at {cap}: {listed}; each is within noise of the threshold there, so the bracket "
        "is what this cap can place (a new search with a larger search.cap can narrow it)"
    )


def _grids(record: SearchRecord) -> str:
    """The fixed grids of the same resolution the search compares with: the one a user would have
    run (every case at every length and the base) and the one sized in hindsight (a record from
    before the cap's default holds only the second, as ``fixed_grid``)."""
    grid, hindsight = record.fixed_grid, record.fixed_grid_hindsight
    if hindsight is None:
        return (
            f"a fixed grid of the same resolution ({grid.lengths} lengths × "
            f"{grid.instances_per_length} instances) would take {grid.calls:,} calls"
        )
    share = record.calls / grid.calls if grid.calls else 0.0
    base = " and the base" if record.definition.relative else ""
    return (
        f"the fixed grid of the same resolution, every one of the {grid.instances_per_length:,} cases "
        f"at each of its {grid.lengths} lengths{base}, would take {grid.calls:,} calls "
        f"(the search took {share:.0%} of them); sized in hindsight, with the "
        f"{hindsight.instances_per_length:,} instances the search needed at its most demanding "
        f"decided length, {hindsight.calls:,}"
    )


def worst_case_line(worst: WorstCase, budgets: dict[str, float | int | None]) -> str:
    cost = "unknown (no price for this model; add it under prices:)"
    if worst.cost is not None:
        cost = f"${worst.cost:,.4f}"
    base = " and the base" if worst.base else ""
    line = (
        f"search worst case: at most {worst.calls:,} calls ({worst.lengths} grid lengths{base} × the cap "
        f"of {worst.cap:,} instances × {worst.calls_per_instance} calls each), prompt tokens "
        f"about {worst.prompt_tokens:,}, output tokens at most {worst.max_output_tokens:,}, estimated "
        f"cost at most {cost}"
    )
    stops = [
        f"{name} {value:,}" if not isinstance(value, float) else f"{name} ${value:,.4f}"
        for name, value in budgets.items()
        if value is not None
    ]
    return line + (f"; the budget stops it sooner ({', '.join(stops)})" if stops else "; no budget set")


def print_search_dry_run(planned: SearchDryRun, console: Console, warn: Callable[[str], None]) -> None:
    """The worst case first, then the warnings, then the ordinary dry run of the first batch."""
    console.print(worst_case_line(planned.worst, planned.budgets), markup=False)
    for line in planned.warnings:
        warn(line)
    lengths = ", ".join(f"{length:,}" for length in planned.probe_lengths)
    where = "the base and the range's ends" if planned.worst.base else "the range's ends"
    console.print(
        f"first batch ({planned.probe_instances} instances) planned and verified at {lengths} tokens "
        f"({where}); no model was called:",
        markup=False,
    )
    print_dry_run(planned.probe, console)


def last_per_step(decisions: list[SearchDecision]) -> list[SearchDecision]:
    """Each tested length once, in order of testing, with its final state."""
    final: dict[int, SearchDecision] = {}
    for decision in decisions:
        final.pop(decision.length, None)
        final[decision.length] = decision
    order = list(dict.fromkeys(d.length for d in decisions))
    return [final[length] for length in order]
