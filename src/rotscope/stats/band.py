"""Where a control length's accuracy stands against the reference band of 90-95%: by its point
(``calibration``) and by its interval (``band_verdict``)."""

from __future__ import annotations

from typing import Literal

SATURATED_POINT = 0.95
"""Above this control-length accuracy a probe is saturated: the reference band is 90-95%."""
TOO_HARD_POINT = 0.90
"""Below this control-length accuracy a probe is too hard for the reference band."""


def calibration(point: float | None) -> Literal["saturated", "in band", "too hard", "no data"]:
    """Where the control length's accuracy (a point estimate) stands against the reference band of
    90-95%: ``saturated`` above 0.95, ``too hard`` below 0.90, ``in band`` from 0.90 to 0.95
    inclusive. The verdict is on the point, as the band is; its interval is reported beside it
    (16 instances cannot place a lower bound above 0.95, so a verdict on the bound could never
    say saturated)."""
    if point is None:
        return "no data"
    if point > SATURATED_POINT:
        return "saturated"
    if point < TOO_HARD_POINT:
        return "too hard"
    return "in band"


BandVerdict = Literal["in band", "below the band", "above the band", "overlaps the band", "no data"]


def band_verdict(low: float | None, high: float | None) -> BandVerdict:
    """Where the control length's accuracy stands against the reference band, read from its
    interval: ``in band`` when the interval lies inside 0.90-0.95, ``below``/``above the band``
    when it lies wholly outside, ``overlaps the band`` otherwise (the data cannot say which). The
    point verdict (``calibration``) is what picks the lead; this is what a view may state."""
    if low is None or high is None:
        return "no data"
    if high < TOO_HARD_POINT:
        return "below the band"
    if low > SATURATED_POINT:
        return "above the band"
    if low >= TOO_HARD_POINT and high <= SATURATED_POINT:
        return "in band"
    return "overlaps the band"
