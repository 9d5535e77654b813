"""The effective length of each task, led by the hardest probe in band at its control length.

Pooling every task into one effective length gives a number that belongs to no probe (niah at
1.00 and nolima at 0.00 pool to a base of 0.5); the headline names each task's own value instead.
The lead is the probe whose control length is in the calibration band (so a loss is measurable
and the probe is not trivially easy) with the lowest accuracy there: the most demanding probe the
model still does at the short length.
"""

from __future__ import annotations

from typing import Any

IN_BAND = "in band"
LEAD_RULE = (
    "the hardest probe in band at its control length: among tasks whose calibration verdict is "
    f"'{IN_BAND}', the lowest instance_accuracy at the control length (ties: the first in the run's order)"
)
_KEPT = (
    "definition", "value", "state", "bracket", "point_near_threshold", "conservative", "conservative_state",
    "conservative_deprecated", "base_score", "base_lengths", "base_ci", "base_ci_method",
    "unbalanced_lengths", "no_curve",
)  # fmt: skip


def _control_point(analysis: dict[str, Any]) -> float:
    calibration = analysis["calibration"]
    point = calibration.get("instance_accuracy", calibration["accuracy"])
    return 1.0 if point is None else float(point)


def lead_task(analyses: list[dict[str, Any]]) -> str | None:
    """The task that leads the headline (``LEAD_RULE``), or ``None`` when no task is in band."""
    in_band = [analysis for analysis in analyses if analysis["calibration"]["verdict"] == IN_BAND]
    if not in_band:
        return None
    return str(min(in_band, key=_control_point)["task"])


def effective_lengths_by_task(analyses: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's ``effective_lengths``: the lead, its rule, and one entry per task, the lead
    first and the others in the run's order."""
    lead = lead_task(analyses)
    ordered = sorted(analyses, key=lambda analysis: analysis["task"] != lead)
    return {
        "lead": lead,
        "lead_rule": LEAD_RULE,
        "tasks": [
            {
                "task": analysis["task"],
                "data": analysis.get("data", "scored"),
                **{key: analysis["effective_length"].get(key) for key in _KEPT},
                "calibration": {
                    "length": analysis["calibration"]["length"],
                    "verdict": analysis["calibration"]["verdict"],
                    "instance_accuracy": analysis["calibration"].get("instance_accuracy"),
                    "ci_low": analysis["calibration"].get("ci_low"),
                    "ci_high": analysis["calibration"].get("ci_high"),
                    "band_verdict": analysis["calibration"].get("band_verdict"),
                },
            }
            for analysis in ordered
        ],
    }
