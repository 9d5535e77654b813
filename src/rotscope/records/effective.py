"""The summary's effective lengths: each definition's value, its state and its bracket, and the
per-task entries of ``effective_lengths`` (``rotscope.analysis.tasks``, ``analysis.bracket``,
``analysis.headline``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from rotscope.records._base import Count, Length, Record

EffectiveState = Literal["value", "below-shortest", "at-least-longest", "no-signal", "no-data"]
"""value: a length that falls below follows it; at-least-longest: nothing tested fell below (value
is the longest tested, a lower limit); below-shortest: the shortest length already falls below
(value null); no-signal: base 0 or its 95% upper bound below 0.5 (value null); no-data: nothing
scored (value null)."""
BracketState = Literal[
    "value", "at-least", "at-least-longest", "below", "below-shortest", "cannot-bound", "no-signal", "no-data"
]
EndState = Literal["passes", "below-shortest", "fails", "beyond-longest", "no-signal", "no-data"]
TaskData = Literal["scored", "all-error", "pending", "all-rejected", "empty"]
"""What a task's rows hold: some scores; only errors (and pending rows); only pending rows; none,
the verifier rejected every prompt; none at all."""
Verdict = Literal["saturated", "in band", "too hard", "no data"]
BandVerdict = Literal["in band", "below the band", "above the band", "overlaps the band", "no data"]
Interval = Annotated[list[float], Field(min_length=2, max_length=2)]


class BracketEnd(Record):
    """One end of an effective length's bracket."""

    length: Length | None
    """The length this end names; null where it names none."""
    state: EndState
    """low: passes (the effective length is at least length) or below-shortest (no length shown to
    pass); high: fails (it is below length) or beyond-longest (no length shown to fail)."""
    confidence: Annotated[float, Field(gt=0, le=1)]
    """This end's one-sided confidence."""


class BracketTest(Record):
    """One tested length of a bracket: the mean margin over the threshold and its bounds."""

    length: Length
    """The tested length."""
    passes: bool
    """Its lower bound clears the threshold (or it is the sole base length, by definition)."""
    fails: bool
    """Its upper bound at the Bonferroni-split level is below the threshold."""
    estimate: float | None
    """The mean margin: paired score minus F x base, or score minus S."""
    lower: float | None
    """The margin's one-sided lower bound at the end's confidence."""
    upper: float | None
    """The margin's one-sided upper bound at the end's confidence."""
    fail_upper: float | None
    """The upper bound at the Bonferroni-split level the fails use."""
    pairs: Count
    """Instances (pairs of instances, for the relative definition) the test counts."""
    by_definition: bool | None = None
    """True for a sole base length: it passes by definition (absent otherwise)."""


class Bracket(Record):
    """The effective length's bracket: at least low.length and below high.length, jointly at
    confidence (each end one-sided at its own)."""

    state: BracketState
    """value: both ends inside the tested lengths; at-least: a lower end, nothing shown to fail
    above it; at-least-longest: every length passes; below: no lower end, an upper end;
    below-shortest: the shortest length is shown to fail; cannot-bound: neither end."""
    confidence: Annotated[float, Field(gt=0, le=1)]
    """The joint confidence of both ends."""
    low: BracketEnd
    """The lower end: the longest length shown to pass."""
    high: BracketEnd
    """The upper end: the shortest length shown to fail."""
    method: str
    """How the margins' bounds were made (empty without tests)."""
    tests: list[BracketTest]
    """Per tested length, its margin and bounds."""
    point_near_threshold: bool
    """The point estimate could as well have come out a length apart: a length deciding it has an
    interval holding the threshold."""
    near_lengths: list[int] | None = None
    """The lengths whose intervals hold the threshold."""


class Definition(Record):
    """The effective length by one definition."""

    definition: str
    """The definition: ``nolima-0.85`` (relative to the base), ``absolute-0.856`` (RULER's),
    ``longscore``, ``auc-L`` or ``within-noise`` (docs/statistics.md, "Effective-length definitions")."""
    value: int | None
    """The longest length whose score stays at or above the threshold, or (within-noise) is not
    shown worse than the base (see state); null for longscore and auc-L (read measure)."""
    state: EffectiveState
    """What value means."""
    bracket: Bracket | None = None
    """The lengths the effective length is shown to reach and to fall before."""
    point_near_threshold: bool | None = None
    """As the bracket's."""
    conservative: int | None
    """Deprecated (see conservative_deprecated): read bracket."""
    conservative_state: EffectiveState
    """The state of the deprecated conservative scan."""
    conservative_definition: str | None = None
    """What the deprecated conservative scan compares."""
    measure: float | None = None
    """The number a definition gives where it is not a length: ``longscore``'s mean relative drop
    from the base, ``auc-L``'s normalised area; absent for the length definitions (read value)."""
    interval: Interval | None = None
    """The measure's 95% interval, clustered as the cells are (see interval_method); absent for the
    length definitions (read bracket) and where too few instances give none."""
    interval_method: str | None = None
    """How the interval was made, with its clusters."""
    source: str | None = None
    """Where the definition comes from, in one line (docs/statistics.md, "Effective-length
    definitions"); absent in the summary's top-level copy of the primary definition."""
    note: str | None = None
    """What the value stands on: the base lengths, the lengths the area spans and how it is scaled."""


class UnbalancedLength(Record):
    """A length lacking (case, position) pairs another length holds."""

    length: int
    """The length."""
    missing: Annotated[int, Field(ge=1)]
    """How many (case, position) pairs it lacks."""


class EffectiveLength(Definition):
    """The effective length (the relative definition's keys at the top), with the base it is
    measured against and both definitions in ``definitions``."""

    conservative_deprecated: str | None = None
    """Why conservative is deprecated and what to read instead."""
    no_signal: str | None = None
    """When the relative definition has no signal."""
    score: Literal["instance_accuracy"] | None = None
    """The per-length score the effective length scans."""
    base_score: float | None
    """The base: the mean score over the base lengths."""
    base_lengths: list[Length] | None = None
    """The lengths that formed the base: those of analysis.base_lengths that were tested, else the
    shortest tested length; empty without data."""
    base_ci: Interval | None = None
    """The base's 95% interval, each case once over the base lengths."""
    base_ci_method: str | None = None
    """What base_ci is: Wilson on case means, or adjusted t on case means clustered on the haystack
    variant; null without data (absent in summaries of earlier versions)."""
    unbalanced_lengths: list[UnbalancedLength] | None = None
    """Lengths lacking (case, position) pairs another length holds (rejected, failed or pending
    there): their scores average over other depths and cases."""
    definitions: list[Definition] | None = None
    """Every definition, the relative one (the primary, as at the top) first, then absolute-S,
    longscore, auc-L and within-noise (in summaries before issue 51: the first two only)."""
    no_curve: str | None = None
    """Why there is no length curve (each case at its own length: replayed recordings, pinned
    cases); absent where there is one."""


class LeadCalibration(Record):
    """A task's calibration at its control length, as the headline reads it."""

    length: Length
    """The control length (the task's shortest)."""
    verdict: Verdict
    """The point against the 90-95% band (see the task's calibration)."""
    instance_accuracy: float | None = None
    """The mean of the instance means at the control length."""
    ci_low: float | None = None
    """Its interval's lower end."""
    ci_high: float | None = None
    """Its interval's upper end."""
    band_verdict: BandVerdict | None = None
    """The interval against the band."""


class TaskEffectiveLength(Record):
    """One task's own effective length, as the headline names it."""

    task: str
    """The task family."""
    data: TaskData | None = None
    """What the task's rows hold."""
    definition: str
    """As the task's effective_length."""
    value: int | None
    """As the task's effective_length."""
    state: EffectiveState
    """As the task's effective_length."""
    bracket: Bracket | None = None
    """As the task's effective_length."""
    point_near_threshold: bool | None = None
    """As the task's effective_length."""
    conservative: int | None = None
    """Deprecated: read bracket."""
    conservative_state: EffectiveState | None = None
    """As the task's effective_length."""
    conservative_deprecated: str | None = None
    """As the task's effective_length."""
    base_score: float | None
    """As the task's effective_length."""
    base_lengths: list[Length] | None = None
    """As the task's effective_length."""
    base_ci: Interval | None = None
    """As the task's effective_length."""
    base_ci_method: str | None = None
    """As the task's effective_length."""
    unbalanced_lengths: list[UnbalancedLength] | None = None
    """As the task's effective_length."""
    no_curve: str | None = None
    """As the task's effective_length."""
    calibration: LeadCalibration
    """The task's calibration at its control length."""


class EffectiveLengths(Record):
    """Each task's own effective length (the pooled effective_length belongs to no probe when tasks
    differ), led by the hardest probe in band at its control length."""

    lead: str | None
    """The task that leads the headline; null when no task's calibration is 'in band'."""
    lead_rule: str
    """How the lead is chosen."""
    tasks: list[TaskEffectiveLength]
    """One entry per task, the lead first, the others in the run's order."""
