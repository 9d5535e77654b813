"""The units ``show --baseline-window`` enters one value each: conversations by ``cluster_id``, hour
blocks without one; window or later by the first record; entered complete, in the order they
began, as a prefix; a resumed conversation's records after its idle gap left out."""

from __future__ import annotations

import numpy as np

from rotscope.monitor.units import (
    ENTERED_SIDE,
    IDLE_SECONDS,
    OUTSIDE_SIDE,
    WAITING_SIDE,
    WINDOW_SIDE,
    group_units,
    unit_means,
)

END = 10_000.0


def test_a_conversation_is_one_unit_on_the_side_it_began() -> None:
    # "a" begins in the window and goes on after it; "b" begins after it
    epochs = np.array([END - 10, END + 5, END + 20, END + 30, END + 4 * IDLE_SECONDS])
    clusters = ["a", "a", "b", "b", "c"]
    units = group_units(epochs, clusters, 0.0, END)
    assert list(units.side[:2]) == [WINDOW_SIDE, OUTSIDE_SIDE]  # a's later record counts nowhere
    assert units.unit[2] == units.unit[3] and list(units.side[2:4]) == [ENTERED_SIDE] * 2
    assert units.side[4] == WAITING_SIDE  # the newest record's conversation is still open
    assert units.window_units == 1 and units.waiting_units == 1 and units.conversations == 2
    assert list(units.order) == [units.unit[2]]


def test_an_open_conversation_holds_back_those_begun_after_it() -> None:
    # "long" began first and its last record is recent; "short" began later and is long over
    epochs = END + np.array([1, 2, 3, 0.9 * IDLE_SECONDS, 1.8 * IDLE_SECONDS, 2 * IDLE_SECONDS])
    units = group_units(epochs, ["long", "short", "short", "long", "long", "other"], 0.0, END)
    assert units.order.size == 0 and units.waiting_units == 3
    assert set(units.side) == {WAITING_SIDE}


def test_a_resumed_conversation_keeps_only_its_records_before_the_gap() -> None:
    epochs = np.array([END + 1, END + 2, END + 2 + 2 * IDLE_SECONDS, END + 10 * IDLE_SECONDS])
    units = group_units(epochs, ["a", "a", "a", "b"], 0.0, END)
    assert list(units.side) == [ENTERED_SIDE, ENTERED_SIDE, OUTSIDE_SIDE, WAITING_SIDE]


def test_records_without_an_id_are_hour_blocks() -> None:
    epochs = np.array([END - 3600.0, END - 1, END + 10, END + 3599, END + 3600, END + 3700])
    units = group_units(epochs, [None] * 6, 0.0, END)
    assert units.window_units == 1 and units.blocks == 2  # one window block, one entered
    assert list(units.side) == [WINDOW_SIDE, WINDOW_SIDE, ENTERED_SIDE, ENTERED_SIDE] + [WAITING_SIDE] * 2
    assert units.unit[2] == units.unit[3] != units.unit[4]


def test_unit_means_per_bin_and_pooled() -> None:
    per_bin, size, pooled = unit_means(
        np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1]), np.array([1.0, 0.0, 1.0, 0.0]), 2, 2
    )
    assert per_bin[0, 0] == 0.5 and per_bin[0, 1] == 1.0 and np.isnan(per_bin[1, 0])
    assert size.tolist() == [[2.0, 1.0], [0.0, 1.0]]
    assert pooled.tolist() == [2 / 3, 0.0]
