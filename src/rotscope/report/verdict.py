"""Terminal view of a gate's release record: the verdict, a row per slice, worst positions."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.report.lines import say
from rotscope.report.numbers import score as _fmt

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "INCONCLUSIVE": "bold yellow"}
_WORST_SHOWN = 10
_CLAIM_LABELS = {"missing": "missing claims", "forbidden": "forbidden claims (high risk)"}


def slice_title(record: dict[str, Any]) -> str:
    """What the slice table shows, a line of its own (a table's title wraps at the table's width)."""
    analysis = record["analysis"]
    return (
        f"candidate − baseline per slice: paired instance accuracy, {_method(record)}, one-sided "
        f"bounds at Holm levels, alpha {analysis['alpha']}, margin {analysis['margin']}, "
        f"floor {analysis['floor']}, min {analysis['min_instances']} instances; "
        "Holm p of the slice's FAIL test"
    )


SLICE_MIN_WIDTH = 16
"""The slice column keeps this many columns (task, length, position and fields, folded onto more
lines where they need them) however narrow the console; the numbers take the rest."""


def slice_table(record: dict[str, Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for name in ("slice", "inst.", "base", "cand.", "diff", "bounds", "Holm p", "verdict"):
        if name == "slice":
            table.add_column(name, justify="left", min_width=SLICE_MIN_WIDTH, overflow="fold")
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for item in record["slices"]:
        fields = "".join(f" {key}={value}" for key, value in item["fields"].items())
        table.add_row(
            Text(
                f"{item['task']} {item['length']:,} {item['position']}{fields}"
            ),  # case-file values, not markup
            str(item["instances"]),
            _fmt(item["baseline_accuracy"]),
            _fmt(item["candidate_accuracy"]),
            _fmt(item["difference"], signed=True),
            f"[{_fmt(item['lower'], True)}, {_fmt(item['upper'], True)}]",
            _holm_p(item),
            f"[{_STYLE[item['verdict']]}]{item['verdict']}[/]",
        )
    return table


def _method(record: dict[str, Any]) -> str:
    """The slice test a record used: a record written before the tests' version 2 bootstrapped."""
    if "tests" not in record:
        analysis = record["analysis"]
        resamples, seed = analysis.get("resamples"), analysis.get("bootstrap_seed")
        return f"cluster bootstrap ({resamples} resamples, seed {seed})"
    return "adjusted t"


def _holm_p(item: dict[str, Any]) -> str:
    value = item.get("p_inferior_holm") if "floor_p_holm" in item else item.get("p_noninferior_holm")
    return "-" if value is None else f"{value:.4f}"


def pooled_line(record: dict[str, Any]) -> str | None:
    """The pooled non-inferiority test in one line (``None`` for a record from before it)."""
    tests = record.get("tests")
    if not tests:
        return None
    pooled = tests["pooled_noninferiority"]
    if pooled["difference"] is None:
        return "pooled: no paired cases"
    return (
        f"pooled over all slices ({pooled['clusters']} cases, each counted once): candidate − baseline "
        f"{pooled['difference']:+.3f}, one-sided bounds [{_fmt(pooled['lower'], True)}, "
        f"{_fmt(pooled['upper'], True)}] at alpha {pooled['alpha']} each, "
        f"margin {record['analysis']['margin']}"
    )


def support_lines(record: dict[str, Any]) -> list[str]:
    """Per task the window the release may claim (``supported_up_to``)."""
    return [f"{task}: {entry['sentence']}" for task, entry in (record.get("support") or {}).items()]


def print_record(record: dict[str, Any], console: Console) -> None:
    record = terminal_safe_tree(record)  # case ids and reasons: no control character reaches the terminal
    for role in ("baseline", "candidate"):
        if record[role].get("imported"):
            say(console, f"{role} {record[role]['run']}: {record[role]['imported']}")
    say(console, slice_title(record), indent="  ")
    console.print(slice_table(record))
    worst = [entry for entry in record["worst_positions"] if entry["range"] or entry["worst_accuracy"] < 1]
    if worst:
        say(
            console,
            f"worst position per case (candidate; cases wrong somewhere, largest range across positions "
            f"first, top {_WORST_SHOWN}):",
        )
        for entry in worst[:_WORST_SHOWN]:
            baseline = "-" if entry["baseline_range"] is None else f"{entry['baseline_range']:.2f}"
            console.print(
                f"  {entry['case_id']}: worst {entry['worst_position']} ({entry['worst_accuracy']:.2f}), "
                f"range {entry['range']:.2f} (baseline range {baseline})",
                markup=False,
            )
    for role in ("baseline", "candidate"):
        for name, counts in record["claims"][role].items():
            total = sum(counts.values())
            top = ", ".join(f"{claim} x{n}" for claim, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
            console.print(
                f"{role} {_CLAIM_LABELS.get(name, name)}: {total}{f' ({top})' if top else ''}", markup=False
            )
    errors = record["errors"]
    console.print(
        f"excluded pairs {errors['pairs_excluded']} (errors: baseline {errors['baseline_errors']}, "
        f"candidate {errors['candidate_errors']})"
    )
    for role in ("baseline", "candidate"):
        fields = [deviation["field"] for deviation in record[role]["plan_deviations"]]
        if fields:
            console.print(
                f"{role} ran with {len(fields)} recorded plan deviation(s): {', '.join(fields)}", markup=False
            )
    if "power" in record:  # a record written before the gate stated its power has none
        for line in power_lines(record["power"]):
            say(console, line)
    pooled = pooled_line(record)
    if pooled is not None:
        say(console, pooled)
    for line in support_lines(record):
        say(console, line)
    note = (record.get("tests") or {}).get("note")
    if note:
        say(console, f"note: {note}")
    for line in layout_lines(record.get("layouts")):
        say(console, line)
    verdict = record["verdict"]
    decided = record.get("decided_by")
    console.print(
        f"[{_STYLE[verdict]}]{verdict}[/] (exit {record['exit_code']})"
        + (f", decided by: {escape(', '.join(decided))}" if decided else "")
    )
    for reason in record["reasons"]:
        console.print(f"  {reason}", markup=False)
    if record.get("rollback"):
        console.print("rollback:", markup=False)
        for step in record["rollback"]["steps"]:
            console.print(f"  - {step}", markup=False)


def layout_lines(layouts: dict[str, Any] | None) -> list[str]:
    """The layouts that moved under the candidate's tokenizer or template, apart from the answers
    that changed; nothing for a record written before it said so."""
    if not layouts:
        return []
    if not layouts.get("spans_known", True):
        return [
            f"layouts: not compared (an imported run has no prompts or token spans); answers "
            f"changed in {layouts['answers_changed']} of {layouts['paired_layouts']} paired items"
        ]
    same = "same tokenizer" if layouts["same_tokenizer"] else "another tokenizer"
    template = "same template" if layouts["same_template"] else "another template"
    moved_answers = sum(1 for entry in layouts["changed"] if entry["layout_moved"])
    return [
        f"layouts ({same}, {template}): token spans moved in {layouts['spans_moved']} of "
        f"{layouts['paired_layouts']} paired layouts; answers changed in {layouts['answers_changed']} "
        f"({moved_answers} of them where the layout moved)"
    ]


def power_lines(power: dict[str, Any]) -> list[str]:
    """What a plan's (or a gate's) simulated power says, in two sentences; a record from before the
    simulation gave a normal approximation of one slice's power, shown as it was."""
    if "power_at_drop" in power:
        return [_old_power_line(power)]
    if not power.get("simulated"):
        return [f"gate power: not simulated ({power.get('reason', 'no slices')})"]
    level = power["power_level"]
    detectable = power["detectable_one_slice_drop"]
    caught = (
        f"the smallest drop in that slice FAILed with {level:.0%} power is {detectable:.2f}"
        if detectable is not None
        else f"no drop in that slice FAILs with {level:.0%} power"
    )
    return [
        f"gate power ({power['slices']} slices, {power['clusters']} cases, at least "
        f"{power['instances_per_slice']} instances per slice, margin {power['margin']}): "
        f"P(PASS | identical) = {power['pass_identical']:.2f}, "
        f"P(FAIL | identical) = {power['fail_identical']:.2f}, "
        f"P(FAIL | a drop of 2x margin in {power['one_slice']}) = {power['fail_one_slice_2x_margin']:.2f}, "
        f"P(FAIL | a drop of the margin everywhere) = {power['fail_margin_everywhere']:.2f} "
        f"(P(PASS) there {power['pass_margin_everywhere']:.2f}), "
        f"P(FAIL | 2x margin everywhere) = {power['fail_2x_margin_everywhere']:.2f}; {caught}",
        f"  (simulated through the gate's own tests, {power['datasets']} datasets per truth: "
        f"{power['truth']}; more cases per task or fewer slices buy power)",
    ]


def _old_power_line(power: dict[str, Any]) -> str:
    detectable = power["detectable_drop"]
    caught = (
        f"the smallest drop caught with 80% power is {detectable:.2f}"
        if isinstance(detectable, float)
        else "no drop is caught with 80% power"
    )
    return (
        f"gate power: a drop of {power['drop']:.2f} in one of {power['slices']} slices FAILs with "
        f"probability {power['power_at_drop']:.2f} at {power['instances']} instances per slice; {caught} "
        f"(normal approximation at baseline accuracy {power['assumed_base']:.2f})"
    )
