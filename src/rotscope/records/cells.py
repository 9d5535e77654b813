"""The summary's cells: counts, accuracy and its interval over a group of rows
(``rotscope.analysis.cells``), in the grid (``cells``), per length (``lengths``), for the controls
and the evidence-only runs, and the static-vs-session gaps (``analysis.fillers``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from rotscope.records._base import Count, Gap, Length, Record, Share

MEASURE_PREFIX = "mean_"
"""A cell's key for a scorer's partial-credit measure: ``mean_<measure>`` (``answer_kinds``)."""
ClusterOn = Literal["variant", "instance"]


class Counts(Record):
    """How the rows of a group came out."""

    n: Count
    """Rows (items: a question at a layout in a trial)."""
    instances: Count
    """Distinct instances (prompts) among them."""
    correct: Count
    """Scored rows judged correct."""
    incorrect: Count
    """Scored rows judged incorrect."""
    abstained: Count
    """Scored rows that abstained."""
    errors: Count
    """Rows whose call failed."""
    pending: Count | None = None
    """Rows not yet run."""
    judged: Count | None = None
    """Scored rows whose outcome the judge decided."""


class VariantPart(Record):
    """A cell's rows from one haystack variant."""

    variant: Count
    """The haystack variant."""
    n: Count
    """Its scored rows."""
    instances: Count
    """Its instances."""
    correct: Count
    """Its correct rows."""
    instance_accuracy: Share
    """The mean of its instance means."""


def _measures_in_schema(schema: dict[str, Any]) -> None:
    schema.pop("additionalProperties", None)
    schema["patternProperties"] = {f"^{MEASURE_PREFIX}": {"type": "number", "minimum": 0, "maximum": 1}}
    schema["additionalProperties"] = False


_MEASURED = ConfigDict(extra="allow", json_schema_extra=_measures_in_schema)
"""Open to ``mean_<measure>`` keys only (each a share); restated by each subclass, since a key's
base (a closed ``Record``) would otherwise close it again."""


class CellStats(Counts):
    """Counts, accuracy and its interval over a group of rows; a scorer's partial-credit measures
    as ``mean_<measure>`` (any registered measure, a number in [0, 1])."""

    model_config = _MEASURED
    __pydantic_extra__: dict[str, Share] = Field(init=False)

    accuracy: Share | None
    """Items: correct / (n - errors - pending)."""
    instance_accuracy: Share | None = None
    """The mean of the instance means: the centre of the interval."""
    instance_correct: float | None = None
    """The sum of the instance means."""
    ci_low: Share | None
    """The interval's lower end."""
    ci_high: Share | None
    """The interval's upper end."""
    ci_method: str | None = None
    """How the interval was made: 'adjusted t on instance means', with ', clustered on N haystack
    variants' or a note in parentheses; null without instances."""
    clusters: Count | None = None
    """How many clusters the interval counts: the haystack variants or the instances."""
    cluster_on: ClusterOn | None = None
    """What the interval clusters on."""
    by_variant: list[VariantPart] | None = None
    """The cell split by haystack variant, where its scored rows come from more than one."""
    error_rate: Share | None = None
    """Errors / attempted items (pending excluded)."""
    categories: dict[str, int] | None = None
    """Scored rows per category (a scorer's finer outcome)."""
    mean_recall: Share | None = None
    """Cells of set answers: the mean share of the expected strings a reply names (RULER's
    string_match_all, partial credit); absent where no scored row has a set answer."""
    mean_similarity: Share | None = None
    """Cells of reply answers (coreference): the mean of MRCR's similarity ratio; absent where no
    scored row has a reply answer."""

    @model_validator(mode="after")
    def _only_measures(self) -> CellStats:
        unknown = sorted(key for key in self.__pydantic_extra__ or {} if not key.startswith(MEASURE_PREFIX))
        if unknown:
            raise ValueError(f"unknown keys {unknown}: a cell's only open keys are {MEASURE_PREFIX}<measure>")
        return self


Depth = Annotated[float, Field(ge=0, le=1)]


class CellKey(Record):
    """Where a cell sits: a task at a length and a depth (or a named layout), in a filler."""

    task: str
    """The task family."""
    length: Length
    """The prompt length in model tokens."""
    depth: Depth | str | None
    """The share of filler before the piece that completes the answer (a family whose depth names
    a region: see region); a layout name in cells that have a layout; null only in an all-rejected
    cell of an offset no prompt could hold."""
    position: str | None = None
    """The position as the experiment named it (a name, an offset ``@N``), null for a depth."""
    layout: str | None = None
    """A family's named layout (reasoning: end, middle, middle_twice, middle_dup)."""
    layout_order: int | None = None
    """The layout's place in its family's order."""
    filler: str | None = None
    """The filler type (a family's own, or ``session``); absent in static filler."""


class Cell(CellStats, CellKey):
    """One cell of the grid: its key, then its counts and statistics."""

    model_config = _MEASURED

    rejected: Count | None = None
    """Questions of this cell whose prompts the verifier rejected (never sent)."""
    rejected_cases: list[str] | None = None
    """The case ids of those questions."""
    all_rejected: bool | None = None
    """Every prompt of the cell was rejected: the cell is shown with n 0, not dropped."""
    region: Annotated[list[Share], Field(min_length=2, max_length=2)] | None = None
    """Cells of a family whose depth names a region (aggregation): the first and last depth its
    evidence pieces reached, measured from their spans."""


class LengthKey(Record):
    """A length."""

    length: Length
    """The prompt length in model tokens."""


class LengthCell(CellStats, LengthKey):
    """Every probe of one length, pooled."""

    model_config = _MEASURED


class SeparationKey(Record):
    """A task at one separation of its facts (``placement.separations``), at one length or all."""

    task: str
    """The task family."""
    separation: Annotated[int, Field(ge=1)] | Annotated[float, Field(gt=0, lt=1)]
    """The separation as the experiment gave it: filler tokens (an int) or a share of the filler."""
    length: Length | None
    """The prompt length; null: every length pooled."""
    asked_tokens: float | None
    """The mean filler tokens the separation asked for between consecutive facts."""
    measured_tokens: float | None
    """The mean filler tokens measured between them on the rendered prompts."""


class SeparationCell(CellStats, SeparationKey):
    """Accuracy by separation: every probe of a task at one separation (one length, or all), its
    depths pooled, with the cells' interval (adjusted t on instance means, clustered as a cell's)."""

    model_config = _MEASURED


class Control(Counts):
    """A task's evidence-absent controls at one length (in one filler)."""

    task: str
    """The task family."""
    length: Length
    """The prompt length in model tokens."""
    kind: str
    """What the control measures (the family's ``control_kind``: abstention, or an instruction
    family's own); views word the control by it."""
    hallucinated: Count
    """Controls that stated an answer the prompt does not hold."""
    filler: str | None = None
    """``session`` for controls in session filler; absent in static filler."""


class EvidenceOnly(Counts):
    """A task's cases run with their evidence alone (no padding)."""

    task: str
    """The task family."""
    accuracy: Share | None
    """Correct / (n - errors - pending)."""


class FillerGap(Record):
    """The same probe in session and in static filler of equal token length, paired on cases."""

    task: str
    """The task family."""
    length: Length | None
    """The length; null: all lengths pooled."""
    static_accuracy: Share | None
    """The cases' mean in static filler."""
    session_accuracy: Share | None
    """The cases' mean in session filler."""
    gap: Gap | None
    """Session minus static, the mean of per-case differences; below 0, the session costs accuracy."""
    ci_low: Gap | None
    """The gap's interval, lower end."""
    ci_high: Gap | None
    """The gap's interval, upper end."""
    pairs: Count
    """Cases scored in both fillers."""
    method: str | None = None
    """How the interval was made."""
    too_few: bool | None = None
    """Fewer pairs than an interval needs."""
    unmatched: Count
    """(length, position) layouts only one filler holds, left out of both sides."""
