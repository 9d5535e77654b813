"""Ingested outcomes against a baseline window (``rotscope monitor show --baseline-window
FROM..TO``): the canary's sequential test, unpaired, per length bin × position bin and pooled,
on **units** (``monitor.units``: a conversation, by ``cluster_id``; an hour block for records
without one), one value each, never one per record.

The units of the window are the reference: per bin, the mean over the window's units of each
unit's answered share, taken at its lower cluster-robust bound (``stats.cluster_t_from_totals`` on
the units' means: the t on clusters ``monitor.rates`` uses, one-sided, half the bin's alpha), a
constant ``r``. Every later unit, once complete and in the order the units began, is one value
``x = (r − its answered share + 1) / 2`` of the bin's one-sided confidence sequence
(``monitor.sequential``, the other half): its lower bound bounds ``r − p_now`` and so, with the
reference's bound, the real drop of the per-unit answered rate ``p_window − p_now`` (each
conversation counted once, however long). A unit's value is entered once and never changed, so
every ``show`` extends one sequence: anytime-valid, ``show`` may be run every hour. Alpha splits
over the bins with window units and the pooled sequence, as the canary's. Forbidden claims are in
no rate (``show`` counts them apart) and so in no sequence.

What it assumes (``monitor.units``): units independent of one another, each later unit's share
with the window's mean under no change, and records ingested within ``units.IDLE_SECONDS`` of
their time. Records of one conversation need not be independent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from rotscope.errors import BadInput
from rotscope.monitor.rates import length_bin, position_bin
from rotscope.monitor.record import WindowBin, WindowComparison, WindowMargins
from rotscope.monitor.schema import OUTCOMES
from rotscope.monitor.sequential import POOLED, Margins, drops_tested, run_sequences, status_of
from rotscope.monitor.store import MonitorStore
from rotscope.monitor.units import ENTERED_SIDE, WAITING_SIDE, WINDOW_SIDE, Units, group_units, unit_means
from rotscope.stats.intervals import CELL_PSEUDO_WEIGHT, cluster_t_from_totals

_ANSWERED = OUTCOMES.index("answered")
_FORBIDDEN = OUTCOMES.index("forbidden_claim")


def _when(text: str, where: str) -> float:
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInput(f"--baseline-window: {where} {text!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # a date or a time without a zone: UTC
    return when.timestamp()


def parse_window(value: str) -> tuple[float, float]:
    """``FROM..TO`` (ISO 8601 times or dates, UTC where no zone is given) as epochs."""
    parts = value.split("..")
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise BadInput(f"--baseline-window: {value!r} is not FROM..TO (ISO 8601 times)")
    start, end = _when(parts[0], "FROM"), _when(parts[1], "TO")
    if end <= start:
        raise BadInput(f"--baseline-window: {value!r} ends before it begins")
    return start, end


def reference_low(means: NDArray[np.float64], alpha: float) -> float:
    """The one-sided lower bound (at ``alpha / 2``) of the mean of the window units' answered
    shares: the cluster t of ``monitor.rates`` with each unit a cluster of one value."""
    if means.size == 0:
        return 0.0
    low, _ = cluster_t_from_totals(
        means, np.ones(means.size), bounds=(0.0, 1.0), confidence=1 - alpha, weight=CELL_PSEUDO_WEIGHT
    )
    return float(low)


@dataclass(frozen=True)
class WindowTest:
    """The test on arrays (bins on the first axis, ``pooled`` last): what ``window_comparison``
    prints, and what ``benchmarks/monitor_window.py`` checks its vectorised path against."""

    reference: NDArray[np.float64]
    window_units: NDArray[np.int64]
    units: NDArray[np.int64]
    unit_mean: NDArray[np.float64]
    warned: NDArray[np.bool_]
    alerted: NDArray[np.bool_]
    lower: NDArray[np.float64]
    alpha: float


def window_test(
    units: Units,
    bins: NDArray[np.int64],
    answered: NDArray[np.float64],
    bin_count: int,
    margins: Margins,
    *,
    unit_count: int,
) -> WindowTest:
    """The sequences of ``bin_count`` bins (those with window units; ``bins[i]`` each record's)
    and the pooled one over the entered units of ``units`` (``unit_count`` of them in all, their
    numbers below it), at ``margins``."""
    alpha = margins.alpha / (bin_count + 1)
    number = unit_count
    result = []
    for side in (WINDOW_SIDE, ENTERED_SIDE):
        mine = units.side == side
        result.append(unit_means(units.unit[mine], bins[mine], answered[mine], number, bin_count))
    (window_bins, window_sizes, window_pooled), (later_bins, later_sizes, later_pooled) = result
    present = window_sizes > 0
    reference = np.array(
        [reference_low(window_bins[present[:, b], b], alpha) for b in range(bin_count)]
        + [reference_low(window_pooled[present.any(axis=1)], alpha)]
    )
    order = units.order[later_sizes[units.order].sum(axis=1) > 0]  # units with a tested record
    entered = later_sizes[order] > 0  # (entered units in order, bins)
    steps, where = np.nonzero(entered)  # row-major: in unit order, a unit's bins together
    x_bins = (reference[where] - later_bins[order][steps, where] + 1.0) / 2.0
    x_pooled = (reference[-1] - later_pooled[order] + 1.0) / 2.0
    sequence = run_sequences(where, x_bins, x_pooled, bin_count, alpha / 2, drops_tested(margins))
    counts = np.append(entered.sum(axis=0), order.size)
    sums = np.append(np.nansum(np.where(entered, later_bins[order], 0.0), axis=0), later_pooled[order].sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    return WindowTest(
        reference=reference,
        window_units=np.append(present.sum(axis=0), present.any(axis=1).sum()),
        units=counts,
        unit_mean=mean,
        warned=sequence.crossed(margins.warn),
        alerted=sequence.crossed(margins.fail),
        lower=sequence.lower_bound(),
        alpha=alpha,
    )


def _unit_name(units: Units) -> str:
    if units.blocks == 0:
        return "conversation"
    if units.conversations == 0:
        return "hour block"
    return "conversation or hour block"


def window_comparison(
    store: MonitorStore, window: str, *, margins: Margins | None = None, position_bins: int = 3
) -> WindowComparison:
    """The units after ``window`` against the window's, per bin and pooled: the status, the bins
    responsible and each bin's numbers (``margins``: the canary's defaults when ``None``)."""
    margins = margins or Margins()
    start, end = parse_window(window)
    index = {name: number for number, name in enumerate(OUTCOMES)}
    epochs: list[float] = []
    names: list[str] = []
    clusters: list[str | None] = []
    answered_list: list[float] = []
    for epoch, length, position, outcome, cluster in store.timed_outcomes_clustered():
        number = index[outcome]
        if number == _FORBIDDEN:
            continue
        epochs.append(epoch)
        names.append(f"{length_bin(length)[1]}/{position_bin(position, position_bins)[1]}")
        clusters.append(cluster)
        answered_list.append(float(number == _ANSWERED))
    units = group_units(np.array(epochs, dtype=float), clusters, start, end)
    in_window = {name for name, side in zip(names, units.side, strict=True) if side == WINDOW_SIDE}
    bin_names = sorted(in_window, key=lambda name: (int(name[1:].split(",")[0]), name))
    slot = {name: i for i, name in enumerate(bin_names)}
    bins = np.array([slot.get(name, -1) for name in names], dtype=np.int64)
    answered = np.array(answered_list, dtype=float)
    later = (units.side == ENTERED_SIDE) | (units.side == WAITING_SIDE)
    skipped = int((later & (bins < 0)).sum())
    valid = (units.unit >= 0) & (bins >= 0)  # a window record's bin is always one of bin_names
    test = window_test(
        Units(units.unit[valid], units.side[valid], units.order, 0, 0, 0, 0),
        bins[valid],
        answered[valid],
        len(bin_names),
        margins,
        unit_count=int(units.unit.max()) + 1 if units.unit.size else 0,
    )
    entries: list[WindowBin] = []
    for i, name in enumerate([*bin_names, POOLED]):
        mine = np.ones(len(names), dtype=bool) if name == POOLED else bins == i
        window_values = answered[mine & (units.side == WINDOW_SIDE)]
        now = answered[mine & (units.side == ENTERED_SIDE)]
        seen = bool(test.units[i])
        entries.append(
            WindowBin(
                bin=name,
                window_records=int(window_values.size),
                window_answered=round(float(window_values.mean()), 4) if window_values.size else None,
                window_units=int(test.window_units[i]),
                reference=round(float(test.reference[i]), 4),
                records=int(now.size),
                units=int(test.units[i]),
                answered=round(float(now.mean()), 4) if now.size else None,
                unit_answered=round(float(test.unit_mean[i]), 4) if seen else None,
                drop_lower=round(float(test.lower[i]), 4) if seen else -1.0,
                status=status_of(bool(test.warned[i]), bool(test.alerted[i])),
            )
        )
    status = status_of(bool(test.warned.any()), bool(test.alerted.any()))
    return WindowComparison(
        window=window,
        status=status,
        responsible=[entry.bin for entry in entries if status != "OK" and entry.status == status],
        margins=WindowMargins(warn=margins.warn, fail=margins.fail, alpha=margins.alpha),
        alpha_per_bin=test.alpha,
        skipped_records=skipped,
        unit=_unit_name(units),
        waiting_units=units.waiting_units,
        waiting_records=int(((units.side == WAITING_SIDE) & (bins >= 0)).sum()),
        bins=entries,
    )


def window_lines(comparison: WindowComparison) -> list[str]:
    """The comparison as terminal lines: the status and what one value is, then a line per bin
    with later units."""
    margins = comparison.margins
    responsible = ", ".join(comparison.responsible)
    unit = comparison.unit or "record"
    out = [
        f"against the baseline window {comparison.window}: {comparison.status}"
        + (f" in {responsible}" if responsible else "")
        + f" (answered rate per {unit}, each {unit} one value; WARN above a drop of {margins.warn:.2f}, "
        f"ALERT above {margins.fail:.2f}, anytime-valid)"
    ]
    for entry in comparison.bins:
        if not entry.records:
            continue
        # a bin with later records has an answered rate, and every bin here has window records
        units = f" in {entry.units} {unit}s" if entry.units is not None else ""
        window_units = f" in {entry.window_units}" if entry.window_units is not None else ""
        per_unit = f" ({entry.unit_answered:.1%} per {unit})" if entry.unit_answered is not None else ""
        out.append(
            f"  {entry.bin}: window {entry.window_answered:.1%} of {entry.window_records}{window_units}, "
            f"since {entry.answered:.1%} of {entry.records}{units}{per_unit}, "
            f"drop at least {entry.drop_lower:.2f}: {entry.status}"
        )
    if comparison.waiting_units:
        out.append(
            f"  {comparison.waiting_units} later {unit}s ({comparison.waiting_records} records) not "
            "entered yet: still open, or begun after one that is"
        )
    if comparison.skipped_records:
        skipped = comparison.skipped_records
        out.append(f"  {skipped} later records in bins the window has none of (not tested)")
    if comparison.unit is not None:
        out.append(
            f"  note: one value per {unit}, no longer one per record; a status an earlier version "
            "printed for this store may differ"
        )
    return out
