"""The summary of a run (``rotscope show --json``, built by ``rotscope.analysis.summary``): its
typed model, from which ``schemas/summary.schema.json`` and the docs' key table are generated."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from rotscope.records import RecordKind
from rotscope.records._base import Count, Length, Record, Share
from rotscope.records.cells import Cell, Control, EvidenceOnly, FillerGap, LengthCell, SeparationCell
from rotscope.records.effective import EffectiveLength, EffectiveLengths
from rotscope.records.run import (
    CacheControl,
    Corpus,
    Cost,
    ErrorCap,
    Execution,
    Judge,
    PlanRecord,
    SessionGeneration,
    Timing,
    TokenCounts,
    Tokens,
)
from rotscope.records.scores import KeptScore, ScoreAgreement, ScoreName
from rotscope.records.tasks import TaskAnalysis


class CaseLayout(Record):
    """A case at one layout."""

    length: Length
    """The prompt length."""
    position: str
    """The layout's label (a position name or the depth to two places, ``FILLER/`` before it)."""
    depth: Annotated[float, Field(ge=0, le=1)]
    """The depth."""
    n: Count
    """Rows of the case there."""
    accuracy: Share | None
    """Correct share of its scored rows; null when none is scored."""


class WorstLayout(Record):
    """A case's worst layout."""

    length: Length
    """The prompt length."""
    position: str
    """The layout's label."""
    accuracy: Share
    """The case's accuracy there."""


class QuestionLength(Record):
    """A case's scored rows at one length, over its depths and trials."""

    length: Length
    """The prompt length."""
    correct: Count
    """Correct scored rows."""
    scored: Count
    """Scored rows."""
    accuracy: Share | None
    """``correct / scored``; null when none is scored."""


class CaseResult(Record):
    """One case: each layout's accuracy, the worst, the evidence-only result, claims and citations
    got wrong."""

    task: str
    """The task family."""
    case_id: str
    """The case."""
    slices: dict[str, str]
    """The case's slice fields (case files: risk, hops, ...)."""
    layouts: list[CaseLayout]
    """Each layout's accuracy."""
    worst: WorstLayout | None
    """The worst scored layout; null when none is scored."""
    range: Share | None
    """Best minus worst layout accuracy."""
    evidence_only: Share | None
    """Accuracy with the evidence alone, no padding; null when not run."""
    capability_failure: bool
    """Fails even with its evidence alone."""
    positional_failure: bool
    """Passes with its evidence alone, fails at some layout."""
    forbidden_claims: Count
    """Rows stating a forbidden claim (high risk)."""
    missing_claims: list[str]
    """Claim ids some reply missed."""
    wrong_citations: list[str]
    """Citations some reply got wrong."""
    missing_citations: list[str]
    """Citations some reply left out."""
    categories: dict[str, int]
    """Scored rows per category."""
    question: str | None = None
    """The question asked (a multi-question prompt's case: the first part's)."""
    correct: Count | None = None
    """Correct scored rows over all its layouts and trials (the evidence-only control apart)."""
    scored: Count | None = None
    """Scored rows over all its layouts and trials."""
    accuracy: Share | None = None
    """The question's accuracy: ``correct / scored`` (a share of rows, which share the case: no
    interval); null when none is scored. ``show`` and the report list it per question."""
    lengths: list[QuestionLength] | None = None
    """Its accuracy at each length."""


class Items(Record):
    """The run's rows."""

    total: Count
    """Rows planned."""
    done: Count
    """Rows scored."""
    errors: Count
    """Rows in error."""
    rejected_prompts: Count | None = None
    """Prompts the verifier rejected (never sent)."""


class Rejection(Record):
    """A prompt the verifier rejected, with the cell it would have counted in."""

    task: str
    """The task family."""
    case_ids: list[str]
    """The scored case of each question of the prompt."""
    control: bool
    """An evidence-absent control."""
    length: Count
    """The length asked."""
    depth: float | None
    """The depth; null where the layout never got one (an offset a length cannot hold)."""
    position: str | None
    """The position as named."""
    filler: str | None = None
    """The filler type, if not static."""
    reason: str
    """Why the verifier rejected it."""


class Imported(Record):
    """Where the rows of a folder made by ``rotscope import`` came from."""

    source: str
    """The imported file's name."""
    format: Literal["csv", "jsonl", "inspect", "lm-eval"]
    """Its format: a CSV or JSON Lines table (docs/commands.md), an Inspect AI log, or lm-evaluation-harness's
    --log_samples files (``imports.lm_eval``)."""
    sha256: str
    """The file's SHA-256."""
    items: Count
    """The rows it gave."""
    ignored_columns: list[str]
    """Columns of the file that rotscope does not read (none in an Inspect log)."""
    unit: Literal["tokens", "characters", "words"] | None = None
    """What the file's lengths count (its ``unit`` column); absent: tokens."""
    binned_lengths: list[Count] | None = None
    """The edges its lengths were binned to (``--bin-lengths``): each item's length is the
    smallest edge at or above its own, which stays its ``prompt_tokens``."""
    model_column: str | None = None
    """The column that named each row's model (``--model-column``: one folder per model)."""
    note: str
    """What every view says of it: "imported from FILE (no prompts, spans or verification)", with
    the unit and the binning where the file has them."""


class Summary(Record):
    """The summary of a run: its cells, per-task analysis, effective lengths, controls, cases,
    counts, tokens, cost, and what it ran on."""

    run: str
    """The run folder's name."""
    model: str | None
    """The model under test."""
    task: str
    """The run's task families, comma separated."""
    imported: Imported | None = None
    """Set for a folder made by ``rotscope import``: its rows came from another harness, with no
    prompts, token spans or verification; null for a run rotscope ran."""
    score: ScoreName = "accuracy"
    """The score every statistic and verdict of this summary stands on (``--score``): ``accuracy``
    (each row 1 where its reply was right), or ``likelihood`` (each row the probability the model
    gave the gold answer); by default accuracy where the run has replies, likelihood for a run
    that kept only likelihoods (``run --score likelihood``). Absent in summaries from before."""
    kept: KeptScore | None = None
    """What the run kept per row: ``accuracy``, ``likelihood`` or ``both``; null for a run from
    before likelihoods were read, or an imported one."""
    likelihood_unread: bool = False
    """The run kept both scores but no scored row has the answer's likelihood: a likelihood is read
    for a prompt of one question with a gold answer, and these prompts hold several questions
    (``questions_per_prompt`` > 1) or their answers are checked by rules (``instruction``)."""
    agreement: list[ScoreAgreement] | None = None
    """Per task, accuracy and the answer's likelihood side by side: both per length, their rank
    correlation over the cells, and the rows on which they disagree; empty where the run keeps
    one score."""
    cells: list[Cell]
    """One per task, length, depth (or layout) and filler; open to a scorer's partial-credit
    measures, ``mean_<measure>`` (a number in [0, 1])."""
    lengths: list[LengthCell]
    """Every probe of one length, pooled."""
    separations: list[SeparationCell] | None = None
    """Where the run has the axis (``placement.separations``): accuracy by separation per task, every
    length pooled (length null), then per length; absent in a run without it. A cell of ``cells``
    pools its separations, as it pools its cases."""
    effective_length: EffectiveLength
    """The effective length pooled over the run's tasks."""
    effective_lengths: EffectiveLengths
    """Each task's own effective length, led by the hardest probe in band."""
    tasks: list[TaskAnalysis]
    """Per task: calibration, degradation, position effect, effective length; open to the keys a
    family's own analysis adds (``FamilyHooks.analyse``)."""
    filler_gap: list[FillerGap]
    """Per task, the same probe in session and static filler, pooled (length null), then per length;
    empty unless the run has probes in both fillers."""
    controls: list[Control]
    """The evidence-absent controls per task and length, each with its kind."""
    evidence_only: list[EvidenceOnly]
    """Per task: its cases with their evidence alone."""
    cases: list[CaseResult]
    """Per case: each layout's accuracy, the worst, the evidence-only result, claims got wrong."""
    capability_failures: list[str]
    """Case ids that fail even with their evidence alone."""
    positional_failures: list[str]
    """Case ids that pass with their evidence alone but fail at some layout."""
    high_risk: Count
    """Rows that state a forbidden claim."""
    items: Items
    """The run's rows."""
    rejections: list[Rejection]
    """Every prompt the verifier rejected, with the cell it would have counted in."""
    tokens: Tokens
    """Prompt tokens as planned and as evaluated."""
    token_counts: TokenCounts
    """How lengths were counted."""
    timing: Timing
    """When the run ran."""
    execution: Execution
    """How the calls ran."""
    error_cap: ErrorCap
    """The run's error rate against max_error_rate."""
    cost: Cost
    """What the run spent."""
    judge: Judge | None
    """Null when no judge is configured."""
    corpus: Corpus | None
    """The filler the prompts were cut from (null for runs from before it was recorded); open to a
    family that plans its own prompts, which records its corpus under its task's name."""
    session_generation: SessionGeneration | None
    """Null unless the model wrote its own session filler."""
    backend: dict[str, Any] | None
    """The backend's own description (``describe()``): provider, model, digests, options."""
    config: dict[str, Any] | None
    """The experiment as run (``schemas/experiment.schema.json``)."""
    manifest_digest: str | None
    """The digest of the run's frozen manifest."""
    plan: PlanRecord | None
    """The frozen plan (--plan) and the deviations from it; null without one."""
    cache_control: CacheControl | None
    """Null when no cache check ran."""


RECORD = RecordKind("summary", Summary, "rotscope summary", "`rotscope show --json RUN`")
"""The record as registered (the ``rotscope.records`` entry point)."""
