"""Ingested outcomes against a baseline window (``rotscope monitor show --baseline-window
FROM..TO``): the canary's sequential test, unpaired, per length bin × position bin and pooled.

The records of the window are the reference: per bin, the share answered, taken at its lower
Wilson bound (one-sided, half the bin's alpha), a constant ``r``. Every later record, in time
order, is one value ``x = (r − answered + 1) / 2`` of the bin's one-sided confidence sequence
(``monitor.sequential``, the other half): its lower bound bounds ``r − p_now`` and so, with the
reference's bound, the real drop ``p_window − p_now``; anytime-valid, so ``show`` may be run every
hour. Alpha splits over the bins with window records and the pooled sequence, as the canary's.
Forbidden claims are in no rate (``show`` counts them apart) and so in no sequence.

What it assumes that the canary need not: later records of a bin are exchangeable given the past.
Requests of one conversation (a shared ``cluster_id``) are not, so a burst of one long session can
move a bin more than its count suggests; the margins are the guard.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from rotscope.errors import BadInput
from rotscope.monitor.rates import length_bin, position_bin
from rotscope.monitor.record import WindowBin, WindowComparison, WindowMargins
from rotscope.monitor.schema import OUTCOMES
from rotscope.monitor.sequential import POOLED, Margins, drops_tested, run_sequences, status_of
from rotscope.monitor.store import MonitorStore
from rotscope.stats import wilson

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


def window_comparison(
    store: MonitorStore, window: str, *, margins: Margins | None = None, position_bins: int = 3
) -> WindowComparison:
    """The records after ``window`` against the window's, per bin and pooled: the status, the
    bins responsible and each bin's numbers (``margins``: the canary's defaults when ``None``)."""
    margins = margins or Margins()
    start, end = parse_window(window)
    index = {name: number for number, name in enumerate(OUTCOMES)}
    reference: dict[str, list[int]] = {}
    later: list[tuple[float, str, int]] = []
    for epoch, length, position, outcome in store.timed_outcomes():
        number = index[outcome]
        if number == _FORBIDDEN:
            continue
        name = f"{length_bin(length)[1]}/{position_bin(position, position_bins)[1]}"
        answered = int(number == _ANSWERED)
        if start <= epoch < end:
            reference.setdefault(name, []).append(answered)
        elif epoch >= end:
            later.append((epoch, name, answered))
    bins = sorted(reference, key=lambda name: (int(name[1:].split(",")[0]), name))
    alpha = margins.alpha / (len(bins) + 1)
    low: dict[str, float] = {}
    for name in [*bins, POOLED]:
        outcomes = reference[name] if name != POOLED else [v for values in reference.values() for v in values]
        low[name] = wilson(sum(outcomes), len(outcomes), confidence=1 - alpha)[0] if outcomes else 0.0
    later.sort(key=lambda record: record[0])
    kept = [(name, answered) for _, name, answered in later if name in low and name != POOLED]
    slot = {name: i for i, name in enumerate(bins)}
    where = np.array([slot[name] for name, _ in kept], dtype=int)
    answered_now = np.array([answered for _, answered in kept], dtype=float)
    x_bins = (np.array([low[name] for name, _ in kept]) - answered_now + 1.0) / 2.0
    x_pooled = (low[POOLED] - answered_now + 1.0) / 2.0
    sequence = run_sequences(where, x_bins, x_pooled, len(bins), alpha / 2, drops_tested(margins))
    warned, alerted = sequence.crossed(margins.warn), sequence.crossed(margins.fail)
    lower = sequence.lower_bound()
    entries: list[WindowBin] = []
    for i, name in enumerate([*bins, POOLED]):
        window_values = (
            reference[name] if name != POOLED else [v for values in reference.values() for v in values]
        )
        now = answered_now[where == i] if name != POOLED else answered_now
        entries.append(
            WindowBin(
                bin=name,
                window_records=len(window_values),
                window_answered=round(sum(window_values) / len(window_values), 4) if window_values else None,
                reference=round(low[name], 4),
                records=int(now.size),
                answered=round(float(now.mean()), 4) if now.size else None,
                drop_lower=round(float(lower[i]), 4) if now.size else -1.0,
                status=status_of(bool(warned[i]), bool(alerted[i])),
            )
        )
    status = status_of(bool(warned.any()), bool(alerted.any()))
    return WindowComparison(
        window=window,
        status=status,
        responsible=[entry.bin for entry in entries if status != "OK" and entry.status == status],
        margins=WindowMargins(warn=margins.warn, fail=margins.fail, alpha=margins.alpha),
        alpha_per_bin=alpha,
        skipped_records=len(later) - len(kept),
        bins=entries,
    )


def window_lines(comparison: WindowComparison) -> list[str]:
    """The comparison as terminal lines: the status, then a line per bin with later records."""
    margins = comparison.margins
    responsible = ", ".join(comparison.responsible)
    out = [
        f"against the baseline window {comparison.window}: {comparison.status}"
        + (f" in {responsible}" if responsible else "")
        + f" (answered rate; WARN above a drop of {margins.warn:.2f}, ALERT above {margins.fail:.2f}, "
        "anytime-valid)"
    ]
    for entry in comparison.bins:
        if not entry.records:
            continue
        # a bin with later records has an answered rate, and every bin here has window records
        out.append(
            f"  {entry.bin}: window {entry.window_answered:.1%} of {entry.window_records}, "
            f"since {entry.answered:.1%} of {entry.records}, drop at least {entry.drop_lower:.2f}: "
            f"{entry.status}"
        )
    if comparison.skipped_records:
        skipped = comparison.skipped_records
        out.append(f"  {skipped} later records in bins the window has none of (not tested)")
    return out
