"""The search's record (``DIR/search.json``), typed: ``search.run`` builds and writes it,
``modes.dispatch.read_search_record`` reads it back, and ``show``, ``report`` and ``run --resume``
read its attributes. No registered record (no entry point, no schema): the folder's own file.

Strict (a string is no count) but open (a key this version does not name is kept), as its readers
always were; the keys a record written before they existed lacks have defaults, and a record dumps
only the keys it was built or read with (``Record.model_dump``), so the file written is the JSON of
before, key for key."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rotscope.records._base import OpenRecord


class SearchDecision(OpenRecord):
    """What the search concluded at one length after one batch (``search.decisions.Decision``)."""

    index: int | None = None
    """The length's place in the search's grid."""
    length: int
    """The length (model tokens)."""
    instances: int
    """Instances measured at it so far."""
    score: float
    """The mean of the instance means at this length."""
    base: float
    """The mean of the same instances at the base length (relative definitions)."""
    lower: float
    """Lower confidence bound of ``score - F × base`` (relative) or of ``score`` (absolute)."""
    upper: float
    """Its upper bound."""
    state: Literal["pass", "fail", "open"]
    """The length's state after this batch."""


class SearchBracket(OpenRecord):
    """The effective length's bracket."""

    passes: int | None
    """The longest length that passes; null when the range's start already fails."""
    fails: int | None
    """The shortest above it that fails; null when the range's end passes."""


class SearchDefinition(OpenRecord):
    """The effective length's definition."""

    relative: bool
    """Relative (``F × base``, paired by instance) or absolute (a score)."""
    value: float
    """``F``, or the absolute score."""


class SearchBudget(OpenRecord):
    """The search's budget over all steps."""

    max_calls: int | None = None
    """Calls."""
    max_tokens: int | None = None
    """Prompt tokens."""
    max_cost: float | None = None
    """USD."""


class FixedGrid(OpenRecord):
    """A fixed grid of the search's resolution, for comparison."""

    lengths: int
    """Its lengths."""
    instances_per_length: int
    """Instances at each."""
    calls: int
    """The calls it takes."""


class SearchRecord(OpenRecord):
    """``DIR/search.json`` (``search.run``'s module docstring says what each part is)."""

    score: Literal["accuracy", "likelihood"] = "accuracy"
    """The score its decisions stand on: accuracy, or the gold answer's probability for a search
    run with ``score: likelihood``; absent before (and for accuracy)."""
    verdict: Literal["decided", "undecided", "inconclusive"]
    """How the search ended."""
    reason: str | None = None
    """Why it ended so, where it did not decide."""
    bracket: SearchBracket
    """The bracket."""
    effective_length: int | None = None
    """The bracket's passing end."""
    pass_decision: SearchDecision | None
    """The last decision at the passing end."""
    fail_decision: SearchDecision | None
    """The last decision at the failing end."""
    definition: SearchDefinition
    """The definition."""
    confidence: float
    """The confidence level."""
    alpha_per_length: float | None = None
    """Alpha of each grid length (Bonferroni)."""
    resolution: float | None = None
    """The ratio of the bracket's ends the search aims at."""
    range: list[int] = Field(min_length=2, max_length=2)
    """The range's first and last length."""
    base_length: int | None = None
    """The base length (relative definitions)."""
    decisions: list[SearchDecision]
    """Every decision, in order."""
    non_monotone: list[list[int]] = Field(default_factory=list)
    """``[shorter failed, longer]`` pairs scoring above beyond noise."""
    steps: list[str] = Field(default_factory=list)
    """The step folders, in order."""
    calls: int
    """Calls made over all steps."""
    prompt_tokens: int
    """Prompt tokens over all steps."""
    budget: SearchBudget
    """The budget."""
    stopped_by: list[str] = Field(default_factory=list)
    """The budgets that stopped an inconclusive search."""
    cost: float = 0.0
    """USD spent."""
    cap: int | None = None
    """The instance cap."""
    shared_haystacks: int | None = None
    """The fewest haystack variants a step's instances shared; null: none shared."""
    fixed_grid: FixedGrid
    """The fixed grid a user would have run."""
    fixed_grid_hindsight: FixedGrid | None = None
    """The grid sized in hindsight (a record from before the cap's default lacks it)."""
    method: str = ""
    """The method, in words."""
