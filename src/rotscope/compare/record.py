"""The comparison of several runs (``rotscope compare --json``, built by
``rotscope.compare.analysis``) and its machine-readable rows (``--csv``, and the record's
``rows``): their typed models, from which ``schemas/comparison.schema.json``,
``schemas/comparison_row.schema.json`` and the docs' key tables are generated."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from rotscope.records import RecordKind
from rotscope.records._base import Count, Gap, Length, Record, Share
from rotscope.records.effective import BracketState, EffectiveState
from rotscope.records.scores import ScoreName

PairVerdict = Literal["better", "worse", "no difference shown", "too few pairs"]
"""The second model against the first at one length: better or worse where the Holm-adjusted
p-value (across the record's ``family``) is at most ``alpha``; no difference shown otherwise; too
few pairs where fewer than 5 instances pair (nothing tested)."""
Fraction = Annotated[float, Field(gt=0)]


class EffectiveEntry(Record):
    """A model's effective length on a task, from its summary (the task's primary definition)."""

    definition: str | None
    """Which definition (``nolima-0.85``: the longest length before the first below 0.85 x base)."""
    value: Length | None
    """The effective length in tokens; null where the state names none."""
    state: EffectiveState | None
    """How to read ``value`` (as in the summary)."""
    bracket_low: Length | None
    """The bracket's lower end: a length the effective length is shown to reach; null where none."""
    bracket_high: Length | None
    """Its upper end: a length the effective length is shown to be below; null where none."""
    bracket_state: BracketState | None
    """The bracket's state (as in the summary)."""


class ComparedRunEntry(Record):
    """One compared run folder."""

    run: str
    """The run folder's name (with its parent's where two share a name)."""
    label: str
    """How the views and sentences name it: its model, or its folder where two runs share a model."""
    model: str | None
    """The model it ran."""
    imported: bool
    """Its results were imported from another harness (``rotscope import``): no prompts, no spans."""
    left_out_lengths: list[Length] = Field(default_factory=list)
    """Lengths it measured that another compared run did not: left out, as every run is compared on
    the cells all measured (an imported run among them); empty where none."""
    own_effective: dict[str, EffectiveEntry] = Field(default_factory=dict)
    """Per task, its effective length on its own whole grid, where lengths were left out (the
    leaderboard's is on the shared cells only)."""


class WorstPosition(Record):
    """The position where a model does worst on a task, over the lengths."""

    position: str
    """Its name or depth (prefixed with the filler type where the family varies it)."""
    accuracy: Share
    """Its mean instance accuracy over the lengths."""


class LengthEntry(Record):
    """A model's accuracy at one length of a task."""

    length: Length
    """The prompt length in model tokens."""
    fraction_of_window: Fraction | None
    """``length`` as a fraction of the model's context window; null where the window is unknown."""
    accuracy: Share | None
    """Instance accuracy (the mean of instance means); null where nothing is scored."""
    ci_low: Share | None
    """Its 95% interval's lower bound (adjusted t on instance means, clustered on the haystack
    variant where variants are fewer than instances, as in the summary)."""
    ci_high: Share | None
    """Its upper bound."""
    instances: Count
    """Instances scored at this length."""


class LeaderboardEntry(Record):
    """One model on one task's leaderboard."""

    rank: Annotated[int, Field(ge=1)]
    """Its place: by effective length (longest first), then base score (highest first)."""
    task: str
    """The task."""
    run: str
    """The run folder's name."""
    label: str
    """How the views name it."""
    model: str | None
    """The model."""
    imported: bool
    """Imported from another harness."""
    window: Length | None
    """The model's context window in tokens, where its backend reports one."""
    effective_length: EffectiveEntry
    """Its effective length with the bracket."""
    base_score: Share | None
    """The score at the base lengths the effective length is relative to."""
    worst_position: WorstPosition | None
    """Where it does worst; null without a scored cell."""
    lengths: list[LengthEntry]
    """Accuracy at each compared length."""
    prompt_tokens: Count
    """Prompt tokens of the task's finished calls (each call once, counted locally)."""
    completion_tokens: Count
    """Completion tokens the engine or provider reported for them."""
    cost_usd: Annotated[float, Field(ge=0)]
    """What they cost (0 for a local engine)."""
    priced: bool
    """Every call had a price (false: ``cost_usd`` is a lower bound)."""


class PairLength(Record):
    """A pair of models at one length: the second's accuracy minus the first's on the same items."""

    length: Length
    """The prompt length."""
    first_accuracy: Share | None
    """The first model's mean instance accuracy over the paired items."""
    second_accuracy: Share | None
    """The second's."""
    difference: Gap | None
    """Second minus first, the mean paired instance difference; null without pairs."""
    ci_low: Gap | None
    """Its 95% interval's lower bound: the sign-flip test (``test``) inverted (before issue 48:
    ``stats.paired_gap``'s adjusted t on paired instance differences); null below 5 pairs."""
    ci_high: Gap | None
    """Its upper bound."""
    pairs: Count
    """Instances paired (items in error in either run left out)."""
    p_value: Share | None
    """Two-sided p-value of no difference (the test named in ``test``; before issue 48 the adjusted
    t); null where not tested."""
    p_holm: Share | None
    """Holm-adjusted across the record's ``family`` (before issue 48: across the pair's lengths)."""
    verdict: PairVerdict
    """The second model against the first."""
    test: str | None = None
    """The test that gave ``p_value`` and what it clustered on ("exact sign-flip on 16 clusters");
    null where not tested, and in records before issue 48 (the adjusted t)."""


class Pair(Record):
    """Two models' paired differences on one task."""

    task: str
    """The task."""
    first: str
    """The first model's label."""
    second: str
    """The second's (differences are second minus first)."""
    lengths: list[PairLength]
    """One entry per compared length."""
    sentence: str
    """The verdicts in words ("B better than A at 16K and 32K; no difference shown at 4K")."""


class ComparisonRow(Record):
    """One model x task x length: the machine-readable rows a leaderboard is built from (``--csv``)."""

    run: str
    """The run folder's name."""
    model: str | None
    """The model."""
    task: str
    """The task."""
    rank: Annotated[int, Field(ge=1)]
    """The model's place on the task's leaderboard."""
    window: Length | None
    """The model's context window, where known."""
    length: Length
    """The prompt length."""
    fraction_of_window: Fraction | None
    """``length`` over ``window``."""
    accuracy: Share | None
    """Instance accuracy at this length."""
    ci_low: Share | None
    """Its 95% interval's lower bound."""
    ci_high: Share | None
    """Its upper bound."""
    instances: Count
    """Instances scored."""
    effective_length: Length | None
    """The model's effective length on the task."""
    effective_state: EffectiveState | None
    """How to read it."""
    bracket_low: Length | None
    """Its bracket's lower end."""
    bracket_high: Length | None
    """Its upper end."""
    base_score: Share | None
    """The base score of the effective length."""


class Comparison(Record):
    """A comparison of runs on the same items."""

    comparison_version: Annotated[int, Field(ge=1)]
    """The record's version."""
    runs: list[ComparedRunEntry]
    """The compared runs, in the order given."""
    tasks: list[str]
    """The tasks every run measured."""
    lengths: list[Length]
    """The lengths every run measured, ascending."""
    positions: list[str] | None = None
    """Where an imported run is compared: the positions of the cells (task, length, position) every
    run measured, to which each run's leaderboard entry and pairs were narrowed; null where no run
    is imported (their grids are checked equal instead)."""
    score: ScoreName = "accuracy"
    """The score every leaderboard, pair and verdict stands on (``--score``): ``accuracy``, or
    ``likelihood`` (the mean probability each model gave the gold answer); absent before."""
    confidence: Share
    """The intervals' confidence."""
    alpha: Annotated[float, Field(gt=0, lt=1)]
    """The family-wise error rate of the verdicts over ``family`` (before issue 48, and where
    ``family`` is null: each pair's verdicts across its lengths)."""
    pair_method: str
    """How a pair's differences are tested."""
    family: str | None = None
    """The verdicts over which ``alpha`` holds, per task: "niah: Holm over 9 tests: 3 pairs x 3
    lengths"; null in records before issue 48 (Holm within each pair)."""
    rule_note: str | None = None
    """Where a verdict differs from the test before issue 48 (adjusted t, Holm within a pair):
    which, said once by every view; null where none does."""
    leaderboard: list[LeaderboardEntry]
    """Per task, the models in rank order."""
    ranked_by: str | None = None
    """The effective-length definition the leaderboards rank by (``compare --definition``: an id of
    the summaries' ``definitions``, or its part before the first '-'); null where the primary
    definition ranks (longest effective length first, then base score); absent before issue 51."""
    pairs: list[Pair]
    """Per task, every pair of models (in the order given)."""
    rows: list[ComparisonRow]
    """One row per model x task x length."""


RECORD = RecordKind("comparison", Comparison, "rotscope comparison", "`rotscope compare --json DIR...`")
ROW_RECORD = RecordKind(
    "comparison_row", ComparisonRow, "rotscope comparison row", "`rotscope compare --csv`"
)
"""The record as registered (the ``rotscope.records`` entry point)."""
