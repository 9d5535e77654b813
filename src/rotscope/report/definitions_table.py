"""``rotscope show DIR --definitions``: per task, a plain-text table of the effective length under
every published definition (``analysis.definitions``), each with its interval or bracket, its state
and its source, within ``WIDTH`` columns."""

from __future__ import annotations

from rotscope.analysis.definitions import short_source_of
from rotscope.records.effective import Definition
from rotscope.records.summary import Summary

WIDTH = 100
"""The table's widest line: the source is named in a few words (the whole line is in ``show
--json``'s ``definitions[].source`` and docs/statistics.md), anything longer than its column cut
with an ellipsis."""
_COLUMNS = (15, 12, 36)
"""Widths of definition, value and interval/bracket; the source takes the rest."""


def value_text(definition: Definition) -> str:
    """The value: a number (longscore, auc-L), a length with what its state makes of it, or the
    state where there is none."""
    if definition.measure is not None:
        return (
            f"{definition.measure:+.3f}"
            if definition.definition == "longscore"
            else f"{definition.measure:.3f}"
        )
    if definition.value is None:
        return definition.state
    if definition.state == "at-least-longest":
        return f">= {definition.value:,}"
    return f"{definition.value:,}"


def range_text(definition: Definition) -> str:
    """The interval (numbers) or the bracket (lengths: at least low, below high), or why none."""
    if definition.interval is not None:
        start, end = definition.interval
        return f"95% [{start:.3f}, {end:.3f}]"
    if definition.measure is not None:
        return "no interval (too few instances)"
    bracket = definition.bracket
    if bracket is None or bracket.state in ("no-data", "no-signal"):
        return "-"
    low, high = bracket.low.length, bracket.high.length
    if definition.definition == "within-noise":
        return "none shown worse" if high is None else f"first shown worse: {high:,}"
    if low is None and high is None:
        return "no length shown to pass or fail"
    reach = "" if low is None else f">= {low:,}"
    below = "" if high is None else f"< {high:,}"
    return f"{bracket.confidence:.0%} bracket {', '.join(part for part in (reach, below) if part)}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def definitions_lines(summary: Summary) -> list[str]:
    """Per task: a heading naming its base, then one line per definition."""
    lines: list[str] = []
    first, second, third = _COLUMNS
    rest = WIDTH - first - second - third - 3
    for analysis in summary.tasks:
        effective = analysis.effective_length
        if effective is None:
            continue
        base = ", ".join(f"{length:,}" for length in effective.base_lengths or []) or "none"
        score = "-" if effective.base_score is None else f"{effective.base_score:.3f}"
        lines.append(_cut(f"{analysis.task}: base {score} at {base}", WIDTH))
        lines.append(f"{'definition':<{first}} {'value':<{second}} {'interval / bracket':<{third}} source")
        for definition in effective.definitions or []:
            name, value = _cut(definition.definition, first), _cut(value_text(definition), second)
            bounds, source = (
                _cut(range_text(definition), third),
                _cut(short_source_of(definition.definition), rest),
            )
            lines.append(f"{name:<{first}} {value:<{second}} {bounds:<{third}} {source}")
        lines.append("")
    return lines[:-1] if lines else ["no task has scores"]
