"""Terminal view of a gate's release record: the verdict, a row per slice, worst positions."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.report.numbers import score as _fmt
from rotscope.stats import POWER as GATE_POWER

_STYLE = {"PASS": "bold green", "FAIL": "bold red", "INCONCLUSIVE": "bold yellow"}
_WORST_SHOWN = 10
_CLAIM_LABELS = {"missing": "missing claims", "forbidden": "forbidden claims (high risk)"}


def slice_table(record: dict[str, Any]) -> Table:
    analysis = record["analysis"]
    table = Table(
        title=(
            f"candidate − baseline per slice: paired instance accuracy, cluster bootstrap "
            f"({analysis['resamples']} resamples, seed {analysis['bootstrap_seed']}), one-sided bounds at "
            f"Holm levels, alpha {analysis['alpha']}, margin {analysis['margin']}, "
            f"floor {analysis['floor']}, min {analysis['min_instances']} instances"
        ),
        title_justify="left",
    )
    for name in ("slice", "inst.", "base", "cand.", "diff", "bounds", "Holm p", "verdict"):
        table.add_column(name, justify="left" if name == "slice" else "right", no_wrap=name != "slice")
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
            "-" if item["p_noninferior_holm"] is None else f"{item['p_noninferior_holm']:.4f}",
            f"[{_STYLE[item['verdict']]}]{item['verdict']}[/]",
        )
    return table


def print_record(record: dict[str, Any], console: Console) -> None:
    record = terminal_safe_tree(record)  # case ids and reasons: no control character reaches the terminal
    console.print(slice_table(record))
    worst = [entry for entry in record["worst_positions"] if entry["range"] or entry["worst_accuracy"] < 1]
    if worst:
        console.print(
            f"worst position per case (candidate; cases wrong somewhere, largest range across positions "
            f"first, top {_WORST_SHOWN}):"
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
        console.print(power_line(record["power"]), markup=False)
    for line in layout_lines(record.get("layouts")):
        console.print(line, markup=False)
    verdict = record["verdict"]
    console.print(f"[{_STYLE[verdict]}]{verdict}[/] (exit {record['exit_code']})")
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
    same = "same tokenizer" if layouts["same_tokenizer"] else "another tokenizer"
    template = "same template" if layouts["same_template"] else "another template"
    moved_answers = sum(1 for entry in layouts["changed"] if entry["layout_moved"])
    return [
        f"layouts ({same}, {template}): token spans moved in {layouts['spans_moved']} of "
        f"{layouts['paired_layouts']} paired layouts; answers changed in {layouts['answers_changed']} "
        f"({moved_answers} of them where the layout moved)"
    ]


def power_line(power: dict[str, float | int | None]) -> str:
    """One sentence a user reads before spending on a gate run."""
    detectable = power["detectable_drop"]
    caught = (
        f"the smallest drop caught with {GATE_POWER:.0%} power is {detectable:.2f}"
        if isinstance(detectable, float)
        else f"no drop is caught with {GATE_POWER:.0%} power"
    )
    return (
        f"gate power: a drop of {power['drop']:.2f} in one of {power['slices']} slices FAILs with "
        f"probability {power['power_at_drop']:.2f} at {power['instances']} instances per slice; {caught} "
        f"(normal approximation at baseline accuracy {power['assumed_base']:.2f}; more cases per task or "
        "fewer slices buy power)"
    )
