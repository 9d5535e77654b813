"""The summary's per-task analysis (``rotscope.analysis.tasks``): calibration at the control
length, degradation as the paired gap to it, the position effect, and a family's own analysis
(reasoning's layout drops and interference)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from rotscope.records._base import Count, Gap, Length, Record, Share
from rotscope.records.cells import ClusterOn, LengthCell
from rotscope.records.effective import BandVerdict, EffectiveLength, TaskData, Verdict

ReasoningLayout = Literal["end", "middle", "middle_twice", "middle_dup"]


class Calibration(Record):
    """The task at its control length (its shortest) against the 90-95% band."""

    length: Length
    """The control length."""
    accuracy: Share | None
    """Items: correct / scored at the control length."""
    instance_accuracy: Share | None = None
    """The mean of the instance means (the verdict reads it)."""
    ci_low: Share | None = None
    """Its interval's lower end."""
    ci_high: Share | None = None
    """Its interval's upper end."""
    ci_method: str | None = None
    """As a cell's ci_method."""
    band: list[float] | None = None
    """The band's ends (too hard below the first, saturated above the second)."""
    verdict: Verdict
    """instance_accuracy against the band: above 0.95 saturated, below 0.90 too hard (the point;
    it picks the headline's lead)."""
    band_verdict: BandVerdict | None = None
    """The control length's 95% interval against the band: inside it, wholly below, wholly above,
    or overlapping it (the data cannot say which)."""


class Degradation(Record):
    """The paired gap of one length to the control length on the same instances."""

    length: Length
    """The longer length."""
    gap: Gap | None
    """Mean paired difference, this length minus the control length."""
    ci_low: Gap | None
    """The gap's interval, lower end."""
    ci_high: Gap | None
    """The gap's interval, upper end."""
    pairs: Count
    """Instances scored at both lengths."""
    method: str | None = None
    """'adjusted t on paired instance differences', with its clusters, or 'too few pairs' or
    'none' without an interval."""
    clusters: Count | None = None
    """How many clusters the interval counts; null without an interval."""
    cluster_on: ClusterOn | None = None
    """What the interval clusters on."""
    too_few: bool | None = None
    """Fewer pairs than rotscope.stats.MIN_PAIRS: no interval (ci_low and ci_high null)."""
    unmatched: Count | None = None
    """(case, position) pairs scored at only one of the two lengths, left out of the gap."""


class MiddleVsEnds(Record):
    """The middle depths against the two ends, per case, by a sign-flip test on cluster totals
    (the position effect's ``method``)."""

    difference: float
    """Mean per-case difference, middle minus ends."""
    pairs: Count
    """Cases scored at every depth."""
    p_value: float | None = None
    """The two-sided p-value of the position effect's ``method`` (before issue 48: a sign test
    on cases)."""
    p_adjusted: float | None = None
    """Benjamini-Hochberg adjusted over the lengths."""
    significant: bool | None = None
    """Rejected at the adjusted level."""


class PositionEffect(Record):
    """One length's position effect."""

    length: Length
    """The length."""
    worst_depth: float
    """The depth with the lowest case-mean accuracy."""
    best_depth: float
    """The depth with the highest."""
    range: Share
    """Best minus worst."""
    middle_vs_ends: MiddleVsEnds | None
    """Null with no middle depth, or no case at every depth."""
    flagged_depths: list[float]
    """Depths significantly below the best (Benjamini-Hochberg over all comparisons)."""
    method: str | None = None
    """The test of every comparison at this length, with its clusters, e.g. "exact sign-flip on 3
    clusters, clustered on 3 haystack variants"; null in summaries written before issue 48 (a sign
    test on cases)."""
    clusters: Count | None = None
    """How many clusters the tests count."""
    cluster_on: ClusterOn | None = None
    """What the tests cluster on."""
    note: str | None = None
    """Why no depth can be flagged here (too few clusters for any p-value to reach 0.05); null
    otherwise."""


class LayoutDrop(Record):
    """Reasoning: a layout's paired drop from the end layout."""

    length: Length
    """The length."""
    filler: str
    """The reasoning filler type."""
    layout: ReasoningLayout
    """The layout compared with end."""
    end_accuracy: Share | None = None
    """The shared cases' mean at the end layout."""
    layout_accuracy: Share | None = None
    """Their mean at this layout."""
    drop: Gap | None
    """End minus this layout."""
    ci_low: float | None
    """The drop's interval, lower end."""
    ci_high: float | None
    """The drop's interval, upper end."""
    pairs: Count
    """Cases scored at both layouts."""
    method: str | None = None
    """How the interval was made."""
    too_few: bool | None = None
    """Fewer pairs than rotscope.stats.MIN_PAIRS: no interval."""


class Interference(Record):
    """Reasoning: what the wrong answers at a layout were."""

    filler: str
    """The reasoning filler type."""
    layout: ReasoningLayout
    """The layout."""
    wrong: Count
    """Wrong answers."""
    unparsed: Count
    """Replies with no number."""
    filler_answer: Count
    """Wrong answers that are the filler's own answer."""
    filler_number: Count
    """Wrong answers that are another number of the filler."""
    other: Count
    """Wrong numbers found nowhere in the filler."""
    share_filler: Share | None
    """Of the numbered wrong answers, the share taken from the filler."""
    share_filler_answer: Share | None = None
    """Of the numbered wrong answers, the share that are the filler's own answer."""


class Reasoning(Record):
    """The reasoning family's own analysis."""

    drops: list[LayoutDrop]
    """Per length, filler and layout: the drop from the end layout."""
    interference: list[Interference]
    """Per filler and layout: where wrong answers came from."""


class TopError(Record):
    """A task's most common error text among its error rows (a task whose every row is an error
    shows it, so the cause is on the first screen)."""

    message: str
    """The error text, as stored in its first row."""
    count: Count
    """Rows with this text, their numbers aside (a count of tokens differs by length)."""
    errors: Count
    """Error rows of the task in all."""


class TaskAnalysis(Record):
    """One task's analysis. Open: a family's own analysis (``FamilyHooks.analyse``) adds its keys
    beside these (reasoning's ``reasoning``; an outside family's any)."""

    model_config = ConfigDict(extra="allow")

    task: str
    """The task family."""
    data: TaskData | None = None
    """What the task's rows hold."""
    top_error: TopError | None = None
    """The most common error among the task's error rows (none without error rows)."""
    lengths: list[LengthCell] | None = None
    """The task's probes per length, pooled over depths."""
    effective_length: EffectiveLength | None = None
    """The task's own effective length."""
    calibration: Calibration | None = None
    """The task at its control length."""
    degradation: list[Degradation] | None = None
    """Paired gap of each length to the control length on the same instances (a prompt:
    multikey's keys of one prompt are one)."""
    position_effect: list[PositionEffect] | None = None
    """Per length: worst and best depth, middle against ends (empty for a family with its own
    analysis)."""
    reasoning: Reasoning | None = None
    """The reasoning family's analysis (its tasks only)."""
