"""The gate's release record (``rotscope gate``, built by ``rotscope.gate.verdict.evaluate`` and
written to ``CANDIDATE/gate-vs-BASELINE.json``): its typed model, from which
``schemas/gate.schema.json`` and the docs' key table are generated."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from rotscope.config import GateConfig
from rotscope.records._base import Count, Length, Record, Share

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
Alpha = Annotated[float, Field(gt=0, lt=0.5)]


class PooledTest(Record):
    """The pooled tests over some slices (all of them, or one task's length)."""

    clusters: Count
    """Cases (clusters) the test counts, each once."""
    difference: float | None
    """Candidate minus baseline accuracy, pooled; null without clusters."""
    lower: float | None
    """The difference's lower bound (non-inferiority: PASS needs it above -margin)."""
    upper: float | None
    """The difference's upper bound (FAIL when below -margin)."""
    p_noninferior: float | None
    """One-sided p-value of non-inferiority."""
    p_inferior: float | None
    """One-sided p-value of inferiority."""
    passes: bool
    """Non-inferiority is shown."""
    fails: bool
    """Inferiority beyond the margin is shown."""


class PooledNoninferiority(PooledTest):
    """The pooled non-inferiority test, with its level."""

    alpha: Alpha
    """Its one-sided level."""
    method: str
    """How it is computed."""


class PooledFail(Record):
    """The pooled FAIL test."""

    alpha: Alpha
    """Its one-sided level."""
    method: str
    """How it is computed."""
    fails: bool
    """It rejects: the gate FAILs."""


class SliceFail(Record):
    """The per-slice FAIL tests."""

    alpha: Alpha
    """Holm's family level."""
    method: str
    """How they are computed."""


class FloorTest(Record):
    """The absolute floor per slice."""

    alpha: Alpha
    """Holm's family level."""
    floor: Share
    """The least candidate accuracy per slice."""
    method: str
    """How it is tested."""


class Tests(Record):
    """Each test with its level."""

    version: int
    """The version of the gate's tests that judged this record."""
    pooled_noninferiority: PooledNoninferiority
    """Pooled non-inferiority over all slices."""
    pooled_fail: PooledFail
    """The pooled FAIL test."""
    slice_fail: SliceFail
    """The per-slice FAIL tests."""
    floor: FloorTest
    """The floor."""
    note: str | None = None
    """For a plan frozen by an earlier rotscope: that it is judged with this version's tests."""


class SupportStep(Record):
    """One length of a task's fixed-sequence support scan."""

    length: Length
    """The length."""
    pooled: PooledTest
    """The pooled tests over that length's slices."""
    holds: bool
    """Every slice there has its minimum counts, none FAILs, and non-inferiority is shown."""
    why: str
    """Why it does not hold (empty when it does)."""


class Support(Record):
    """How far one task's claim reaches."""

    supported_up_to: int | None
    """The longest length at which it and every shorter length hold; null: none."""
    first_unsupported: int | None
    """The first length that does not hold; null: every tested length holds."""
    sentence: str
    """The claim in words."""
    lengths: list[SupportStep]
    """Each tested length, shortest first."""


class GateAnalysis(GateConfig):
    """The analysis the gate applied (the plan's, else the runs' ``gate`` section): its settings
    as the experiment file's ``gate`` keys, read strictly."""

    model_config = ConfigDict(strict=True)

    tested_slices: Count
    """Slices with enough instances to be tested."""


class Binding(Record):
    """What identifies a run: model, tokenizer, template, assembler, cases, plan."""

    run: str
    """The run folder's name."""
    path: str
    """The run folder as given."""
    model: str | None
    """The model."""
    subject: str | None
    """The subject's name (``subjects:``), if the run had one."""
    model_digest: str | None
    """The model file's digest."""
    tokenizer_digest: str | None
    """The tokenizer's digest."""
    template_digest: str | None
    """The chat template's digest."""
    system_prompt_digest: str | None
    """The system prompt's digest."""
    assembler_digest: str | None
    """The prompt assembler's digest."""
    cases_digest: str | None
    """The case file's digest."""
    filler_digest: str | None
    """The filler corpus's digest."""
    manifest_digest: str | None
    """The run's frozen manifest's digest."""
    plan_digest: str | None
    """The frozen plan's digest (--plan)."""
    plan_deviations: list[dict[str, Any]]
    """The run's deviations from that plan."""


class Errors(Record):
    """Rows excluded from the pairing, and each run's error rate."""

    baseline_errors: Count
    """Baseline rows not scored (error or pending)."""
    candidate_errors: Count
    """Candidate rows not scored."""
    pairs_excluded: Count
    """Pairs left out because either row was not scored."""
    baseline_rate: Share
    """The baseline's error rate."""
    candidate_rate: Share
    """The candidate's error rate."""


class SliceRecord(Record):
    """One slice (task x length x position x slice fields): its paired instances and judgement."""

    task: str
    """The task family."""
    length: Count
    """The length (0: the evidence-only control)."""
    position: str
    """The position."""
    fields: dict[str, str]
    """The case-file slice fields that split it."""
    instances: Count
    """Paired instances."""
    pairs: Count
    """Paired items."""
    baseline_accuracy: Share | None
    """The baseline's instance-mean accuracy."""
    candidate_accuracy: Share | None
    """The candidate's."""
    difference: float | None
    """Candidate minus baseline."""
    lower: float | None
    """The difference's lower bound."""
    upper: float | None
    """The difference's upper bound."""
    p_noninferior: float | None
    """One-sided p-value of non-inferiority (for information; a PASS rests on the pooled test)."""
    p_inferior: float | None
    """One-sided p-value of inferiority (the slice's FAIL test)."""
    p_noninferior_holm: float | None
    """Holm-adjusted across the tested slices."""
    p_inferior_holm: float | None
    """Holm-adjusted across the tested slices."""
    candidate_ci_high: float | None
    """The candidate accuracy's upper bound at the floor test's Holm level."""
    floor_p_holm: float | None
    """The floor test's Holm-adjusted p-value."""
    verdict: Verdict
    """The slice's verdict."""
    reason: str
    """Why."""


class Power(Record):
    """What this gate could decide at its counts (a PASS is read against it)."""

    simulated: bool
    """False when there was nothing to simulate (see reason)."""
    reason: str | None = None
    """Why not simulated."""
    datasets: Count | None = None
    """Simulated datasets per truth."""
    power_level: Share | None = None
    """The power the detectable drop is stated at."""
    truth: str | None = None
    """The simulated truth, in words."""
    slices: Count | None = None
    """Slices simulated."""
    clusters: Count | None = None
    """Cases simulated."""
    instances_per_slice: Count | None = None
    """The smallest slice's instances."""
    margin: float | None = None
    """The non-inferiority margin."""
    pass_identical: Share | None = None
    """P(PASS) for an identical candidate."""
    fail_identical: Share | None = None
    """P(FAIL) for an identical candidate."""
    fail_one_slice_2x_margin: Share | None = None
    """P(FAIL) when one slice loses twice the margin."""
    one_slice: str | None = None
    """That slice."""
    fail_margin_everywhere: Share | None = None
    """P(FAIL) when every slice loses the margin."""
    pass_margin_everywhere: Share | None = None
    """P(PASS) when every slice loses the margin."""
    fail_2x_margin_everywhere: Share | None = None
    """P(FAIL) when every slice loses twice the margin."""
    detectable_one_slice_drop: float | None = None
    """The smallest one-slice drop that FAILs with power_level; null when none does."""


class WorstPosition(Record):
    """A case's worst position in the candidate, beside the baseline's range."""

    case_id: str
    """The case."""
    worst_position: str
    """The candidate's worst position."""
    worst_accuracy: Share
    """Its accuracy there."""
    range: Share
    """The candidate's range across positions."""
    baseline_range: Share | None
    """The baseline's; null when the baseline has no scored row of the case."""


class Claims(Record):
    """How often each claim id was missing, forbidden, wrongly cited or uncited (case-file runs)."""

    baseline: dict[str, dict[str, int]]
    """The baseline's counts, per list of the claim report, per claim id."""
    candidate: dict[str, dict[str, int]]
    """The candidate's."""


class Where(Record):
    """A paired layout."""

    task: str
    """The task family."""
    case_id: str
    """The case."""
    length: int
    """The length."""
    position: str
    """The position."""
    trial: int
    """The trial."""


class Moved(Where):
    """A paired layout whose spans or prompt length moved under the candidate."""

    baseline_prompt_tokens: int | None
    """The baseline's prompt tokens."""
    candidate_prompt_tokens: int | None
    """The candidate's."""
    baseline_spans: list[list[int]]
    """The baseline's evidence spans, [start, end]."""
    candidate_spans: list[list[int]]
    """The candidate's."""


class Changed(Where):
    """A paired layout whose scored answer changed."""

    baseline: str | None
    """The baseline's outcome."""
    candidate: str | None
    """The candidate's."""
    layout_moved: bool
    """Its layout moved too."""


class Layouts(Record):
    """Which paired layouts moved under the candidate's tokenizer or template, apart from changed
    answers."""

    same_tokenizer: bool
    """The two runs' tokenizer digests are equal."""
    same_template: bool
    """The two runs' template digests are equal."""
    tokenizer_digests: dict[str, str | None]
    """Each run's tokenizer digest."""
    template_digests: dict[str, str | None]
    """Each run's template digest."""
    paired_layouts: Count
    """Layouts paired."""
    spans_moved: Count
    """Layouts whose spans or prompt length moved."""
    answers_changed: Count
    """Layouts whose scored answer changed."""
    moved: list[Moved]
    """Those that moved."""
    changed: list[Changed]
    """Those whose answer changed."""


class Caches(Record):
    """The caches a rollback drops."""

    drop: str
    """Which caches."""
    built_with: dict[str, Any]
    """The candidate's runtime specification they were built with."""


class Rollback(Record):
    """What a release must do when its gate FAILs."""

    restore: dict[str, Any]
    """The baseline's complete runtime specification (run, subject, model and digests)."""
    restore_settings: dict[str, Any]
    """The baseline's settings its digests stand for."""
    changed: list[str]
    """The runtime keys the candidate changed."""
    unsupported_lengths: dict[str, list[int]]
    """Per task, the tested lengths the candidate may no longer claim."""
    supported_up_to: dict[str, Any] | None
    """The record's supported_up_to, when it has one."""
    lengths_from: str
    """Where unsupported_lengths came from."""
    caches: Caches
    """The caches to drop."""
    cases_command: str
    """The command that keeps the newly failing layouts as pinned cases."""
    steps: list[str]
    """The steps, in words."""


class GateRecord(Record):
    """The release record of a candidate run against a baseline run."""

    verdict: Verdict
    """PASS, FAIL or INCONCLUSIVE."""
    exit_code: Literal[0, 1, 3]
    """``rotscope gate``'s exit status: 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    decided_by: list[str]
    """The tests (or reasons: error rate, unfinished run, no data) that decided it."""
    reasons: list[str]
    """Why, in words."""
    tests: Tests
    """Each test with its level."""
    supported_up_to: dict[str, int | None]
    """Per task, the longest length it may still claim (null: none)."""
    support: dict[str, Support]
    """Per task, how that was found."""
    created_at: str
    """When the record was made (UTC, ISO 8601)."""
    rotscope_version: str
    """The rotscope that made it."""
    plan_digest: str | None
    """The frozen plan's digest (--plan); null without one."""
    analysis: GateAnalysis
    """The analysis applied."""
    baseline: Binding
    """What identifies the baseline run."""
    candidate: Binding
    """What identifies the candidate run."""
    errors: Errors
    """Rows excluded and the error rates."""
    slices: list[SliceRecord]
    """Every slice and its judgement."""
    power: Power
    """What this gate could decide at its counts."""
    worst_positions: list[WorstPosition]
    """Per case, the candidate's worst position; largest range first."""
    claims: Claims
    """Claim counts of each run."""
    layouts: Layouts
    """Which paired layouts moved under the candidate's tokenizer or template."""
    rollback: Rollback | None
    """The rollback guidance of a FAIL; null for any other verdict."""
