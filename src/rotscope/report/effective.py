"""How every view words an effective length: its point, its bracket, the lengths that formed its
base and the calibration band, read as the summary's states say (a summary written before the
bracket existed has none, and is shown without one)."""

from __future__ import annotations

from rotscope.records.effective import Bracket, Definition, LeadCalibration, TaskEffectiveLength
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.numbers import score as _fmt
from rotscope.stats.band import SATURATED_POINT, TOO_HARD_POINT

BAND = f"{TOO_HARD_POINT:.2f}-{SATURATED_POINT:.2f}"


DATA_TEXT = {
    "all-error": "every call failed (errors only; rotscope run --resume retries them)",
    "all-rejected": "the verifier rejected every prompt",
    "empty": "no rows (the task had no cases)",
    "pending": "no call has finished yet",
}
"""Why a task has no score, by its ``data`` (``analysis.tasks.TaskData``)."""


def data_text(data: str | None) -> str | None:
    """Why a task has no score, or ``None`` for a task with scores (or an older summary)."""
    return DATA_TEXT.get(data or "scored")


ERROR_SHOWN = 120
"""Characters of a task's most common error a view shows (the whole text is in each row)."""


def no_scores_text(analysis: TaskAnalysis) -> str | None:
    """Why a task of the summary has no score (``None`` when it has scores); a task whose every row
    is an error names its most common error with its count, so the cause is in the view:
    ``every row an error — 48 × 'prompt truncated: …'; ...``."""
    why = data_text(analysis.data)
    top = analysis.top_error
    if analysis.data != "all-error" or not top:
        return why
    text = " ".join(top.message.split())
    if len(text) > ERROR_SHOWN:
        text = text[: ERROR_SHOWN - 1].rstrip() + "…"
    others = top.errors - top.count
    more = f" (and {others} other errors)" if others else ""
    return (
        f"every row an error — {top.count} × {text!r}{more}; see each row's error with rotscope "
        "export on the run folder; rotscope run --resume retries them once the cause is fixed"
    )


def effective_text(value: int | None, state: str | None, data: str | None = None) -> str:
    """An effective length as its state says to read it (an older summary has no state); a task
    without scores says why (``data``)."""
    if state == "no-data":
        why = data_text(data)
        return f"no data: {why}" if why else "no data"
    if state == "no-signal":
        return "no signal (base score too low to measure a loss)"
    if state == "at-least-longest":
        return f"at least {value:,} tokens (the longest length tested; nothing tested fell below)"
    if value is None:
        return "below the shortest length tested"
    return f"{value:,} tokens"


def _tested(bracket: Bracket) -> list[int]:
    return [test.length for test in bracket.tests]


def bracket_text(bracket: Bracket | None) -> str:
    """``95% bracket: 256 to beyond 1,024 tokens``: the lengths the effective length is shown to
    reach (the lower end) and to fall before (the upper end); empty for an older summary."""
    if not bracket:
        return ""
    state = bracket.state
    if state == "no-data":
        return "no bracket (no data)"
    if state == "no-signal":
        return "no bracket (no signal)"
    low, high = bracket.low.length, bracket.high.length
    lengths = _tested(bracket)
    shortest, longest = (lengths[0], lengths[-1]) if lengths else (None, None)
    shown = {
        "value": lambda: f"{low:,} to under {high:,} tokens",
        "at-least": lambda: f"{low:,} to beyond {longest:,} tokens",
        "at-least-longest": lambda: f"at least {low:,} tokens, the longest tested",
        "below": lambda: f"under {high:,} tokens, not shown to reach {shortest:,}",
        "below-shortest": lambda: f"under {high:,} tokens, the shortest tested",
        "cannot-bound": lambda: f"cannot bound it between {shortest:,} and {longest:,} tokens",
    }[state]()
    return f"{bracket.confidence:.0%} bracket: {shown}"


def is_wide(bracket: Bracket | None) -> bool:
    """Whether the bracket leaves the effective length unplaced: open on a side inside the tested
    range, or with a tested length strictly between its ends."""
    if not bracket or bracket.state in ("no-data", "no-signal"):
        return False
    state = bracket.state
    if state in ("at-least", "below", "cannot-bound"):
        return True
    if state == "value":
        low, high = bracket.low.length, bracket.high.length
        return (
            low is not None and high is not None and any(low < length < high for length in _tested(bracket))
        )
    return False


def near_text(entry: Definition | TaskEffectiveLength) -> str:
    """``; the point is within noise of the threshold at 512`` where it could as well have come out a
    length apart."""
    near = (entry.bracket.near_lengths if entry.bracket else None) or []
    if not near:
        return ""
    return f"; the point is within noise of the threshold at {', '.join(f'{n:,}' for n in near)}"


def base_lengths_text(lengths: list[int] | None) -> str:
    """``at 256`` or ``over 250, 500, 1,000``: which lengths formed the base."""
    if not lengths:
        return ""
    if len(lengths) == 1:
        return f" at {lengths[0]:,}"
    return " over " + ", ".join(f"{length:,}" for length in lengths)


def band_numbers(calibration: LeadCalibration) -> str:
    """``accuracy 0.81 [0.57, 0.93]; band 0.90-0.95``: what a band verdict is read from."""
    point = calibration.instance_accuracy
    interval = ""
    if calibration.ci_low is not None:
        interval = f" [{_fmt(calibration.ci_low)}, {_fmt(calibration.ci_high)}]"
    return f"accuracy {_fmt(point)}{interval}; band {BAND}"


def band_text(calibration: LeadCalibration) -> str:
    """``overlaps the band (point too hard: accuracy 0.81 [0.57, 0.93]; band 0.90-0.95)``: the
    interval's verdict with the numbers it is read from; an older summary without one gives its
    point verdict."""
    verdict = calibration.band_verdict
    if verdict is None:
        return f"{calibration.verdict} ({band_numbers(calibration)})"
    # Where the interval cannot say, the point's verdict (which picks the lead) is named as such.
    by_point = f"point {calibration.verdict}: " if verdict == "overlaps the band" else ""
    return f"{verdict} ({by_point}{band_numbers(calibration)})"
