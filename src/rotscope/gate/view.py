"""Terminal view of a gate's release record (``GateRecord``): the verdict, a row per slice, worst
positions. ``rotscope plan`` words a plan's power with ``power_lines`` too."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.gate.record import NOT_SHOWN_TO_FAIL, Binding, GateRecord, Power, SliceRecord
from rotscope.gate.record_checks import Layouts
from rotscope.report.lines import say
from rotscope.report.numbers import score as _fmt
from rotscope.report.scores import score_label

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "INCONCLUSIVE": "bold yellow", NOT_SHOWN_TO_FAIL: "green"}
_VERDICT_CELL: dict[str, str] = {NOT_SHOWN_TO_FAIL: "not shown\nto fail"}
_WORST_SHOWN = 10
_CLAIM_LABELS = {"missing": "missing claims", "forbidden": "forbidden claims (high risk)"}


def terminal_safe_record(record: GateRecord) -> GateRecord:
    """``record`` with every text in it ``terminal_safe`` (case ids, reasons, slice fields come from
    outside): no control character reaches the terminal or a comment."""
    return GateRecord.model_validate(terminal_safe_tree(record.model_dump()))


def slice_title(record: GateRecord) -> str:
    """What the slice table shows, a line of its own (a table's title wraps at the table's width)."""
    analysis = record.analysis
    method = record.tests.slice_fail.method.replace(" per slice, Holm across slices", "")
    return (
        f"candidate − baseline per slice: paired instance {score_label(record.score)}, {method}, one-sided "
        f"bounds at Holm levels, alpha {analysis.alpha}, margin {analysis.margin}, "
        f"floor {analysis.floor}, min {analysis.min_instances} instances; "
        "Holm p of the slice's FAIL test"
    )


SLICE_MIN_WIDTH = 16
"""The slice column keeps this many columns (task, length, position and fields, folded onto more
lines where they need them) however narrow the console; the numbers take the rest."""


def slice_name(item: SliceRecord) -> str:
    """``niah 4,096 midpoint risk=high``: the slice's task, length, position and fields."""
    fields = "".join(f" {key}={value}" for key, value in item.fields.items())
    return f"{item.task} {item.length:,} {item.position}{fields}"


def slice_table(record: GateRecord) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for name in ("slice", "inst.", "base", "cand.", "diff", "bounds", "Holm p", "verdict"):
        if name == "slice":
            table.add_column(name, justify="left", min_width=SLICE_MIN_WIDTH, overflow="fold")
        elif name == "verdict":  # "not shown to fail" on two lines, so the table fits 80 columns
            table.add_column(name, justify="left", min_width=len(name))
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for item in record.slices:
        table.add_row(
            Text(slice_name(item)),  # case-file values, not markup
            str(item.instances),
            _fmt(item.baseline_accuracy),
            _fmt(item.candidate_accuracy),
            _fmt(item.difference, signed=True),
            f"[{_fmt(item.lower, True)}, {_fmt(item.upper, True)}]",
            "-" if item.p_inferior_holm is None else f"{item.p_inferior_holm:.4f}",
            f"[{_STYLE[item.verdict]}]{_VERDICT_CELL.get(item.verdict, item.verdict)}[/]",
        )
    return table


def pooled_line(record: GateRecord) -> str:
    """The pooled non-inferiority test in one line."""
    pooled = record.tests.pooled_noninferiority
    if pooled.difference is None:
        return "pooled: no paired cases"
    return (
        f"pooled over all slices ({clusters_text(record)}, each counted once): candidate − baseline "
        f"{pooled.difference:+.3f}, one-sided bounds [{_fmt(pooled.lower, True)}, "
        f"{_fmt(pooled.upper, True)}] at alpha {pooled.alpha} each, "
        f"margin {record.analysis.margin}; {pooled.method}"
    )


def clusters_text(record: GateRecord) -> str:
    """What the pooled test counted: "30 cases", "3 haystack variants" (a record before version 3
    of the tests clustered on cases)."""
    return record.tests.clustered_on or f"{record.tests.pooled_noninferiority.clusters} cases"


def undecided_slices(record: GateRecord) -> list[str]:
    """The slices neither shown to fail nor shown within the margin, named (issue 48: a slice not
    shown to fail is not a slice without loss)."""
    return [
        slice_name(item) for item in record.slices if item.within_margin is False and item.verdict != "FAIL"
    ]


def slice_lines(record: GateRecord) -> list[str]:
    """The lines that say what the slices' tests did not show, and the cluster rule's note."""
    lines = []
    undecided = undecided_slices(record)
    if undecided:
        lines.append(
            f"neither shown to fail nor shown within the margin ({len(undecided)} of {len(record.slices)} "
            f"slices; PASS is the pooled test's word alone): {', '.join(undecided)}"
        )
    if record.tests.cluster_note:
        lines.append(f"note: {record.tests.cluster_note}")
    return lines


def support_lines(record: GateRecord) -> list[str]:
    """Per task the window the release may claim (``supported_up_to``)."""
    return [f"{task}: {entry.sentence}" for task, entry in record.support.items()]


def roles(record: GateRecord) -> tuple[tuple[str, Binding], tuple[str, Binding]]:
    """Each run's binding by its role, baseline first."""
    return ("baseline", record.baseline), ("candidate", record.candidate)


def print_record(record: GateRecord, console: Console) -> None:
    """The gate's screen: its verdict first (one line), then the slices, claims, errors, the tests'
    lines and, last, the verdict again with its reasons and a FAIL's rollback."""
    record = terminal_safe_record(record)
    on = score_label(record.score)
    say(console, f"gate: {record.verdict} (exit {record.exit_code}) on {on}; details and reasons below")
    if record.forbidden is not None and record.forbidden.replies:
        console.print(f"[bold red]{escape(record.forbidden.line)}[/]")
    for role, bound in roles(record):
        if bound.imported:
            say(console, f"{role} {bound.run}: {bound.imported}")
    say(console, slice_title(record), indent="  ")
    console.print(slice_table(record))
    worst = [entry for entry in record.worst_positions if entry.range or entry.worst_accuracy < 1]
    if worst:
        say(
            console,
            f"worst position per case (candidate; cases wrong somewhere, largest range across positions "
            f"first, top {_WORST_SHOWN}):",
        )
        for entry in worst[:_WORST_SHOWN]:
            baseline = "-" if entry.baseline_range is None else f"{entry.baseline_range:.2f}"
            console.print(
                f"  {entry.case_id}: worst {entry.worst_position} ({entry.worst_accuracy:.2f}), "
                f"range {entry.range:.2f} (baseline range {baseline})",
                markup=False,
            )
    for role, claims in (("baseline", record.claims.baseline), ("candidate", record.claims.candidate)):
        for name, counts in claims.items():
            total = sum(counts.values())
            top = ", ".join(f"{claim} x{n}" for claim, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
            console.print(
                f"{role} {_CLAIM_LABELS.get(name, name)}: {total}{f' ({top})' if top else ''}", markup=False
            )
    errors = record.errors
    console.print(
        f"excluded pairs {errors.pairs_excluded} (errors: baseline {errors.baseline_errors}, "
        f"candidate {errors.candidate_errors})"
    )
    for role, bound in roles(record):
        # a deviation is the plan module's own entry, stored in the run's metadata as it was found
        fields = [deviation["field"] for deviation in bound.plan_deviations]
        if fields:
            console.print(
                f"{role} ran with {len(fields)} recorded plan deviation(s): {', '.join(fields)}", markup=False
            )
    for line in power_lines(record.power):
        say(console, line)
    say(console, pooled_line(record))
    for line in slice_lines(record):
        say(console, line)
    for line in support_lines(record):
        say(console, line)
    if record.tests.note:
        say(console, f"note: {record.tests.note}")
    for line in layout_lines(record.layouts):
        say(console, line)
    verdict = record.verdict
    decided = record.decided_by
    console.print(
        f"[{_STYLE[verdict]}]{verdict}[/] (exit {record.exit_code}) on {score_label(record.score)}"
        + (f", decided by: {escape(', '.join(decided))}" if decided else "")
    )
    for reason in record.reasons:
        console.print(f"  {reason}", markup=False)
    if record.rollback is not None:
        console.print("rollback:", markup=False)
        for step in record.rollback.steps:
            console.print(f"  - {step}", markup=False)


def layout_lines(layouts: Layouts) -> list[str]:
    """The layouts that moved under the candidate's tokenizer or template, apart from the answers
    that changed."""
    if not layouts.spans_known:
        return [
            f"layouts: not compared (an imported run has no prompts or token spans); answers "
            f"changed in {layouts.answers_changed} of {layouts.paired_layouts} paired items"
        ]
    same = "same tokenizer" if layouts.same_tokenizer else "another tokenizer"
    template = "same template" if layouts.same_template else "another template"
    moved_answers = sum(1 for entry in layouts.changed if entry.layout_moved)
    return [
        f"layouts ({same}, {template}): token spans moved in {layouts.spans_moved} of "
        f"{layouts.paired_layouts} paired layouts; answers changed in {layouts.answers_changed} "
        f"({moved_answers} of them where the layout moved)"
    ]


def power_lines(power: Power) -> list[str]:
    """What a plan's (or a gate's) simulated power says, in two sentences."""
    if not power.simulated:
        return [f"gate power: not simulated ({power.reason or 'no slices'})"]
    level = power.power_level
    detectable = power.detectable_one_slice_drop
    caught = (
        f"the smallest drop in that slice FAILed with {level:.0%} power is {detectable:.2f}"
        if detectable is not None
        else f"no drop in that slice FAILs with {level:.0%} power"
    )
    return [
        f"gate power ({power.slices} slices, {power.clusters} cases, at least "
        f"{power.instances_per_slice} instances per slice, margin {power.margin}): "
        f"P(PASS | identical) = {power.pass_identical:.2f}, "
        f"P(FAIL | identical) = {power.fail_identical:.2f}, "
        f"P(FAIL | a drop of 2x margin in {power.one_slice}) = {power.fail_one_slice_2x_margin:.2f}, "
        f"P(FAIL | a drop of the margin everywhere) = {power.fail_margin_everywhere:.2f} "
        f"(P(PASS) there {power.pass_margin_everywhere:.2f}), "
        f"P(FAIL | 2x margin everywhere) = {power.fail_2x_margin_everywhere:.2f}; {caught}",
        f"  (simulated through the gate's own tests, {power.datasets} datasets per truth: "
        f"{power.truth}; more cases per task or fewer slices buy power)",
    ]
