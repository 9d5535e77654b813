"""Where the control length's accuracy stands against the reference band, read from its interval
(``stats.band.band_verdict``)."""

from __future__ import annotations

import pytest

from rotscope.stats.band import band_verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.91, 0.94, "in band"),
        (0.57, 0.93, "overlaps the band"),
        (0.80, 0.99, "overlaps the band"),
        (0.30, 0.85, "below the band"),
        (0.96, 1.00, "above the band"),
        (None, None, "no data"),
    ],
)
def test_the_band_verdict_reads_the_interval(low: float | None, high: float | None, verdict: str) -> None:
    assert band_verdict(low, high) == verdict
