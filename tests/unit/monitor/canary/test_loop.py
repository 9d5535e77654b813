"""The canary loop's settings are bounded before anything runs: calls per check, the interval, the
number of checks, and --max-checks only beside --every."""

from __future__ import annotations

import pytest

from rotscope.errors import BadInput
from rotscope.monitor.canary.loop import MAX_CALLS_PER_CHECK, MAX_CHECKS, loop_settings, parse_every


def test_one_check_has_no_interval_and_a_loop_has_its_seconds() -> None:
    assert loop_settings(64, None, None) is None
    assert loop_settings(64, "1h30m", 10) == 5400.0
    assert loop_settings(MAX_CALLS_PER_CHECK, "0.01s", MAX_CHECKS) == 0.01
    assert parse_every("1d") == 86400.0


@pytest.mark.parametrize(
    ("calls", "every", "max_checks", "fragment"),
    [
        (0, None, None, "--calls"),
        (MAX_CALLS_PER_CHECK + 1, None, None, "--calls"),
        (10**12, "1h", None, "--calls"),
        (64, None, 3, "only with --every"),
        (64, "1h", 0, "--max-checks"),
        (64, "1h", MAX_CHECKS + 1, "--max-checks"),
        (64, "0.001s", None, "outside"),
        (64, "367d", None, "outside"),
        (64, "soon", None, "not an interval"),
    ],
)
def test_settings_past_their_bounds_are_bad_input(
    calls: int, every: str | None, max_checks: int | None, fragment: str
) -> None:
    with pytest.raises(BadInput, match=fragment):
        loop_settings(calls, every, max_checks)
