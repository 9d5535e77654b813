"""The last two lines of a run's first screen (issue 53): the headline a person reads in ten seconds
(the effective length on the closing sentence's task, its 95% bracket, and where the bracket cannot
place it, about how many cases would) and one next step. The detailed sentence stays above them.

The size is a rough guide, not a plan: it keeps each undecided length's mean margin as measured and
shrinks its bound as one over the square root of the cases (``rotscope plan`` sizes properly)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from rotscope.records.effective import Bracket, BracketTest, TaskEffectiveLength
from rotscope.records.summary import Summary
from rotscope.report.effective import is_wide
from rotscope.report.names import ELIDED, without_paths
from rotscope.report.scores import score_label
from rotscope.report.sentence import closing_task

MOST_CASES = 1000
"""Above this many cases per task the headline says only "more than 1,000"."""


def _tested(bracket: Bracket) -> list[int]:
    return sorted(test.length for test in bracket.tests)


def _between(bracket: Bracket) -> str:
    """``95% between 256 and beyond 1,024``: the bracket in the headline's words."""
    low, high, lengths = bracket.low.length, bracket.high.length, _tested(bracket)
    shortest, longest = (lengths[0], lengths[-1]) if lengths else (None, None)
    state = bracket.state
    confidence = f"{bracket.confidence:.0%}"
    if state == "value":
        return f"{confidence} between {low:,} and under {high:,}"
    if state == "at-least":
        return f"{confidence} between {low:,} and beyond {longest:,}"
    if state == "at-least-longest":
        return f"shown at {confidence}"
    if state == "below":
        return f"{confidence} under {high:,}"
    if state == "below-shortest":
        return f"{confidence} under {high:,}, the shortest tested"
    if state == "cannot-bound":
        return f"{confidence} anywhere from under {shortest:,} to beyond {longest:,}"
    return ""


def _point(entry: TaskEffectiveLength, shortest: int | None) -> str:
    if entry.state in ("no-data", "no-signal"):
        return "not measured (" + ("no data" if entry.state == "no-data" else "no signal at the base") + ")"
    value = entry.value
    if value is None:
        return f"below {shortest:,} tokens, the shortest tested" if shortest else "below the shortest length"
    if entry.state == "at-least-longest":
        return f"at least {value:,} tokens, the longest tested"
    return f"{value:,} tokens"


def _factor(test: BracketTest) -> float | None:
    """How many times the cases this undecided length needs for its bound to clear the threshold
    on the side its mean margin is on; ``None`` for a margin of zero (no size decides it)."""
    estimate = test.estimate
    if estimate is None or estimate == 0:
        return None
    bound = test.lower if estimate > 0 else test.fail_upper
    if bound is None:
        return None
    return ((estimate - bound) / estimate) ** 2


def cases_to_place(bracket: Bracket, cases: int) -> int | None:
    """About how many cases per task would decide every length the bracket leaves open (the lengths
    near the point where named, else every undecided one); ``None`` where none is open or a margin
    is zero; above ``MOST_CASES`` it is ``MOST_CASES + 1``."""
    open_tests = [test for test in bracket.tests if not (test.passes or test.fails or test.by_definition)]
    near = set(bracket.near_lengths or [])
    deciding = [test for test in open_tests if test.length in near] or open_tests
    if not deciding or cases <= 0:
        return None
    factors = [_factor(test) for test in deciding]
    if any(factor is None for factor in factors):
        return None
    needed = math.ceil(cases * max(factor for factor in factors if factor is not None))
    if needed <= cases:
        return None
    return min(needed, MOST_CASES + 1)


def _size_text(needed: int) -> str:
    if needed > MOST_CASES:
        return f"more than {MOST_CASES:,} cases would place it"
    return f"about {needed:,} cases would place it"


def headline(summary: Summary) -> str | None:
    """``Effective length on niah: 512 tokens; 95% between 256 and beyond 1,024; about 200 cases
    would place it``; the score it stands on named where the run kept both or is on the
    likelihood. ``None`` for a run with no task."""
    task = closing_task(summary.effective_lengths)
    if task is None:
        return None
    entry = next(entry for entry in summary.effective_lengths.tasks if entry.task == task)
    analysis = next(analysis for analysis in summary.tasks if analysis.task == task)
    lengths = [line.length for line in analysis.lengths or [] if line.accuracy is not None]
    named = summary.kept == "both" or summary.score != "accuracy"
    on = f" ({score_label(summary.score)})" if named else ""
    text = f"Effective length on {task}{on}: {_point(entry, min(lengths) if lengths else None)}"
    bracket = entry.bracket
    if bracket is None or entry.state in ("no-data", "no-signal"):
        return text
    between = _between(bracket)
    if between:
        text += f"; {between}"
    if is_wide(bracket):
        cases = sum(case.task == task for case in summary.cases)
        needed = cases_to_place(bracket, cases)
        text += f"; {_size_text(needed)}" if needed is not None else "; the data cannot place it"
    return text


def shown_folder(folder: str) -> str:
    """The folder as the screen names it: relative to the working directory where it lies inside
    it; else as given, an absolute path shortened to ``…/<name>`` like every path a view shows (a
    screen pasted into an issue names no path of the machine)."""
    path = Path(folder)
    if path.is_absolute():
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return str(without_paths(folder))
    return folder


def next_step(folder: str) -> str:
    """The one next step: the run's full page, the folder (``shown_folder``) quoted for a shell."""
    shown = shown_folder(folder)
    quoted = shown if shown.startswith(ELIDED) else shlex.quote(shown)
    return f"Next: rotscope report {quoted} (every table and plot)"
