"""A canary check's alert body (``rotscope canary --json``, stored with the check in the
monitoring store): its status, the bins responsible and every bin's sequential test."""

from __future__ import annotations

from typing import Literal

from rotscope.records import RecordKind
from rotscope.records._base import Count, Gap, Record, Share


class CanaryMargins(Record):
    """What the check tolerates."""

    warn: Gap
    """WARN once a drop (baseline − canary accuracy) above this is ruled in."""
    fail: Gap
    """ALERT once a drop above this is ruled in."""
    alpha: Share
    """A bound on the chance of a false ALERT anywhere, ever, given the baseline's recorded
    outcomes (the endpoint's expected score on each probed item at least the baseline's recorded
    one, as at temperature 0); split over the bins. Not a bound when replies are redrawn."""


class CanaryBin(Record):
    """One bin's sequence (or the pooled one) after this check's probes."""

    bin: str
    """``LENGTH/POSITION`` (``1600/0.00-0.33``: length bin, evidence-depth third), or ``pooled``."""
    probes: Count
    """Scored probes of the bin over all checks so far."""
    baseline: Share | None
    """The mean baseline score of those probes' items; null before any probe."""
    canary: Share | None
    """The mean canary score of those probes; null before any probe."""
    drop_lower: Gap
    """The drop's anytime-valid lower confidence bound (accuracy points)."""
    status: Literal["OK", "WARN", "ALERT"]
    """The bin's status: its lower bound against the margins."""


class CanaryAlert(Record):
    """One canary check."""

    check: Count
    """The check's number in the canary (1, 2, ...)."""
    at: str
    """When it was judged (UTC, ISO 8601)."""
    status: Literal["OK", "WARN", "ALERT"]
    """The check's status: the worst of its bins'; exit code 0, 3, 1."""
    responsible: list[str]
    """The bins at that status (empty when OK)."""
    subject: str
    """The subject probed: ``name (model)``, or the model."""
    baseline: str
    """The baseline run folder."""
    score: Literal["accuracy", "likelihood"] = "accuracy"
    """What a probe and the baseline score (``--score``): a reply's correctness, or the probability
    the model gives the gold answer; absent before."""
    probes_this_check: Count
    """Probes this check sent (calls // bins per bin)."""
    errors_this_check: Count
    """Of them, calls that failed (no score; left out of the test)."""
    margins: CanaryMargins
    """The margins and alpha."""
    alpha_per_bin: Share
    """Alpha of each bin's and the pooled sequence: ``alpha / (bins + 1)``."""
    bins: list[CanaryBin]
    """Every bin in length order, then ``pooled``."""


RECORD = RecordKind(
    "canary", CanaryAlert, "rotscope canary alert", "`rotscope canary --json`, stored per check"
)
"""The record as registered (the ``rotscope.records`` entry point)."""
