"""The effective length of each task, led by the hardest probe in band at its control length.

Pooling every task into one effective length gives a number that belongs to no probe (niah at
1.00 and nolima at 0.00 pool to a base of 0.5); the headline names each task's own value instead.
The lead is the probe whose control length is in the calibration band (so a loss is measurable
and the probe is not trivially easy) with the lowest accuracy there: the most demanding probe the
model still does at the short length.
"""

from __future__ import annotations

from rotscope.records.effective import EffectiveLengths, LeadCalibration, TaskEffectiveLength
from rotscope.records.tasks import Calibration, TaskAnalysis

IN_BAND = "in band"
LEAD_RULE = (
    "the hardest probe in band at its control length: among tasks whose calibration verdict is "
    f"'{IN_BAND}', the lowest instance_accuracy at the control length (ties: the first in the run's order)"
)


def _calibration(analysis: TaskAnalysis) -> Calibration:
    # every task's analysis has one (analysis.tasks: task_analysis, empty_task_analysis)
    assert analysis.calibration is not None, analysis.task
    return analysis.calibration


def _control_point(analysis: TaskAnalysis) -> float:
    calibration = _calibration(analysis)
    point = (
        calibration.instance_accuracy
        if "instance_accuracy" in calibration.model_fields_set
        else calibration.accuracy
    )
    return 1.0 if point is None else float(point)


def lead_task(analyses: list[TaskAnalysis]) -> str | None:
    """The task that leads the headline (``LEAD_RULE``), or ``None`` when no task is in band."""
    in_band = [analysis for analysis in analyses if _calibration(analysis).verdict == IN_BAND]
    if not in_band:
        return None
    return min(in_band, key=_control_point).task


def _entry(analysis: TaskAnalysis) -> TaskEffectiveLength:
    """A task's entry: its effective length's keys, each given (null where the task's has none), and
    its calibration as the headline reads it."""
    effective = analysis.effective_length
    assert effective is not None, analysis.task  # as the calibration
    calibration = _calibration(analysis)
    return TaskEffectiveLength(
        task=analysis.task,
        data=analysis.data if "data" in analysis.model_fields_set else "scored",
        definition=effective.definition,
        value=effective.value,
        state=effective.state,
        bracket=effective.bracket,
        point_near_threshold=effective.point_near_threshold,
        conservative=effective.conservative,
        conservative_state=effective.conservative_state,
        conservative_deprecated=effective.conservative_deprecated,
        base_score=effective.base_score,
        base_lengths=effective.base_lengths,
        base_ci=effective.base_ci,
        base_ci_method=effective.base_ci_method,
        unbalanced_lengths=effective.unbalanced_lengths,
        no_curve=effective.no_curve,
        calibration=LeadCalibration(
            length=calibration.length,
            verdict=calibration.verdict,
            instance_accuracy=calibration.instance_accuracy,
            ci_low=calibration.ci_low,
            ci_high=calibration.ci_high,
            band_verdict=calibration.band_verdict,
        ),
    )


def effective_lengths_by_task(analyses: list[TaskAnalysis]) -> EffectiveLengths:
    """The summary's ``effective_lengths``: the lead, its rule, and one entry per task, the lead
    first and the others in the run's order."""
    lead = lead_task(analyses)
    ordered = sorted(analyses, key=lambda analysis: analysis.task != lead)
    return EffectiveLengths(lead=lead, lead_rule=LEAD_RULE, tasks=[_entry(analysis) for analysis in ordered])
