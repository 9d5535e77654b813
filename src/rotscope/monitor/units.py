"""What ``show --baseline-window``'s sequences count as one value: a **unit** of records that
share a cause (``docs/monitor.md``, "Against a baseline window").

A record with a ``cluster_id`` belongs to its conversation; a record without one to the hour
block its time falls in (``BLOCK_SECONDS``, counted from the window's end). Requests of one
conversation arrive together in time and share its luck, so the betting sequence of
``monitor.window`` must not take them one by one as independent values (with nothing changed it
then false-ALERTs more often the longer it watches: ``benchmarks/results/monitor_window.md``). It
takes one value per unit instead, the mean of the unit's records, entered once the unit is
**complete** and never changed afterwards, so that each ``show`` extends one and the same sequence:

- a unit belongs to the window when its first record is in it (only its records inside the window
  count: the reference must not move while the window's conversations go on), to the later
  sequence when its first record is after it; a unit that began before the window is in neither;
- a later conversation is complete once the store's newest record is ``IDLE_SECONDS`` after its
  last one; its records after its first idle gap of that length are left out (a resumed
  conversation does not change a value already entered); an hour block is complete once the
  store holds a record at or after its end;
- units enter in the order they began (the order a conversation's outcome cannot influence, so
  the entered values stay independent of one another with a common mean under no change), and
  only as a prefix: one open conversation holds back those that began after it until it is
  complete (they are counted as waiting).

It assumes records are ingested within ``IDLE_SECONDS`` of their own time, and conversations of
different ``cluster_id`` independent of one another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

BLOCK_SECONDS = 3600.0
"""A record without a ``cluster_id`` is one of the hour block its time falls in."""
IDLE_SECONDS = 1800.0
"""A conversation is complete once the store's newest record is this much after its last one."""

Side = Literal["window", "later", "waiting", "outside"]


@dataclass(frozen=True)
class Units:
    """Each record's unit and side: ``unit[i]`` (an index into the units, -1 for a record in no
    unit), ``side[i]`` (0 window, 1 entered in the later sequence, 2 later but waiting for an open
    unit, 3 in neither: before the window, or after its conversation's idle gap); ``order`` the
    entered units in the order they began; ``kinds`` how many of the units (window and entered)
    are conversations and how many hour blocks."""

    unit: NDArray[np.int64]
    side: NDArray[np.int64]
    order: NDArray[np.int64]
    window_units: int
    waiting_units: int
    conversations: int
    blocks: int


WINDOW_SIDE, ENTERED_SIDE, WAITING_SIDE, OUTSIDE_SIDE = 0, 1, 2, 3


def group_units(
    epochs: NDArray[np.float64], clusters: Sequence[str | None], start: float, end: float
) -> Units:
    """Each record's unit (``clusters[i]``, or its hour block where ``None``) and side, for a
    window ``[start, end)``; ``epochs`` in any order, the newest of them taken as "now"."""
    epochs = np.asarray(epochs, dtype=float)
    count = epochs.size
    unit = np.full(count, -1, dtype=np.int64)
    side = np.full(count, OUTSIDE_SIDE, dtype=np.int64)
    if count == 0:
        return Units(unit, side, np.zeros(0, dtype=np.int64), 0, 0, 0, 0)
    newest = float(epochs.max())
    keys: dict[tuple[bool, str], int] = {}
    members: list[list[int]] = []
    for i in np.argsort(epochs, kind="stable"):
        cluster = clusters[int(i)]
        key = (
            (True, cluster)
            if cluster is not None
            else (False, str(math.floor((float(epochs[i]) - end) / BLOCK_SECONDS)))
        )
        number = keys.setdefault(key, len(keys))
        if number == len(members):
            members.append([])
        members[number].append(int(i))
        unit[i] = number
    began = np.array([epochs[records[0]] for records in members])
    is_conversation = [key[0] for key in keys]
    later: list[tuple[float, int, bool]] = []  # (began, unit, complete)
    window_units = 0
    kinds = [0, 0]
    for number, (records, conversation) in enumerate(zip(members, is_conversation, strict=True)):
        first = float(began[number])
        if start <= first < end:
            inside = [i for i in records if epochs[i] < end]
            side[inside] = WINDOW_SIDE
            window_units += 1
            kinds[conversation] += 1
        elif first >= end:
            if conversation:
                times = epochs[records]
                gaps = np.flatnonzero(np.diff(times) >= IDLE_SECONDS)
                kept = records if gaps.size == 0 else records[: int(gaps[0]) + 1]
                complete = newest - float(epochs[kept[-1]]) >= IDLE_SECONDS
            else:
                kept = records
                block_end = end + (math.floor((first - end) / BLOCK_SECONDS) + 1) * BLOCK_SECONDS
                complete = newest >= block_end
            side[kept] = WAITING_SIDE
            later.append((first, number, complete))
    later.sort()
    entered: list[int] = []
    for _, number, complete in later:
        if not complete:
            break
        entered.append(number)
        kinds[is_conversation[number]] += 1
    for number in entered:
        own = np.asarray(members[number])
        side[own[side[own] == WAITING_SIDE]] = ENTERED_SIDE
    unit[side == OUTSIDE_SIDE] = -1
    return Units(
        unit=unit,
        side=side,
        order=np.asarray(entered, dtype=np.int64),
        window_units=window_units,
        waiting_units=len(later) - len(entered),
        conversations=kinds[1],
        blocks=kinds[0],
    )


def unit_means(
    unit: NDArray[np.int64], bins: NDArray[np.int64], values: NDArray[np.float64], units: int, bin_count: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per unit × bin the mean of ``values`` and the record count (units on the first axis), and
    per unit the mean over all its records (NaN where a unit has no record there)."""
    cell = unit * bin_count + bins
    size = np.bincount(cell, minlength=units * bin_count).reshape(units, bin_count).astype(float)
    total = np.bincount(cell, values, minlength=units * bin_count).reshape(units, bin_count)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_bin = total / size
        pooled = total.sum(axis=1) / size.sum(axis=1)
    return per_bin, size, pooled
