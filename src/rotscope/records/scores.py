"""The summary's two scores side by side (``rotscope.analysis.agreement``): per task, accuracy and
the gold answer's probability per length, and how far the two agree over the task's cells."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from rotscope.records._base import Count, Length, Record, Share

ScoreName = Literal["accuracy", "likelihood"]
"""What a summary's statistics stand on (``rows.ScoreName``, docs/statistics.md, "Scores")."""
KeptScore = Literal["accuracy", "likelihood", "both"]
"""What a run kept per row (``run --score``)."""


class ScoreLength(Record):
    """One length of a task under both scores, over the rows that have both."""

    length: Length
    """The prompt length in model tokens."""
    n: Count
    """Scored rows with a reply's outcome and the answer's likelihood."""
    instances: Count
    """Their instances."""
    accuracy: Share | None
    """Correct share of those rows."""
    accuracy_ci: Annotated[list[Share], Field(min_length=2, max_length=2)] | None
    """Its 95% interval on instance means (as a cell's)."""
    likelihood: Share | None
    """The mean probability the model gave the gold answer (teacher-forced, its tokens only)."""
    likelihood_ci: Annotated[list[Share], Field(min_length=2, max_length=2)] | None
    """Its 95% interval on instance means (as a cell's)."""


class Mismatch(Record):
    """Scored rows on which the two scores disagree one way."""

    n: Count
    """How many."""
    categories: dict[str, int]
    """Their failure categories (the wrong replies'; empty for right replies)."""
    case_ids: list[str]
    """Their cases, sorted."""


class ScoreAgreement(Record):
    """How far a task's accuracy and its answer likelihood agree: a likelihood verdict never
    replaces an accuracy verdict silently."""

    task: str
    """The task family."""
    lengths: list[ScoreLength]
    """Each length under both scores."""
    cells: Count
    """Cells (length, depth, filler) with rows under both scores."""
    spearman: Annotated[float, Field(ge=-1, le=1)] | None
    """The rank correlation (Spearman) of cell accuracy and cell mean answer probability over those
    cells; null with fewer than 3 cells or where either score is the same in every cell."""
    high: Share
    """The probability at or above which an answer counts as likely (``likely_but_wrong``)."""
    low: Share
    """The probability below which an answer counts as unlikely (``right_but_unlikely``)."""
    likely_but_wrong: Mismatch
    """Wrong replies although the model gave the gold answer a probability of at least ``high``:
    the reply lost a fact the model still sees (its format, a copied filler value)."""
    right_but_unlikely: Mismatch
    """Right replies although the gold answer's probability was below ``low``: the reply found
    another way to the answer (a form the reading did not score, a lucky guess)."""
