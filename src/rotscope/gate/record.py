"""The gate's release record (``rotscope gate``, built by ``rotscope.gate.verdict.evaluate`` and
written to ``CANDIDATE/gate-vs-BASELINE.json``): its typed model, from which
``schemas/gate.schema.json`` and the docs' key table are generated."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from rotscope.config.experiment import GateConfig
from rotscope.gate.record_checks import Claims, ForbiddenClaims, Layouts, Rollback, Unplaced, WorstPosition
from rotscope.records import RecordKind
from rotscope.records._base import Count, Length, Record, Share
from rotscope.records.scores import ScoreName

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
NOT_SHOWN_TO_FAIL: Literal["not shown to fail"] = "not shown to fail"
SliceVerdict = Literal["PASS", "FAIL", "INCONCLUSIVE", "not shown to fail"]
"""A slice's verdict: PASS is the gate's pooled non-inferiority alone, so a slice its FAIL test
does not reject is "not shown to fail" (records written before version 3 of the tests say PASS)."""
Alpha = Annotated[float, Field(gt=0, lt=0.5)]


class PooledTest(Record):
    """The pooled tests over some slices (all of them, or one task's length)."""

    clusters: Count
    """Clusters the test counts, each once: cases, or haystack variants where the cases share them
    (``Tests.clustered_on``)."""
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

    @model_serializer(mode="wrap")
    def _level_first(self, dump: SerializerFunctionWrapHandler) -> dict[str, object]:
        """The level and method ahead of the test's result, as records have always been written
        (the schema, generated for validation, is unaffected)."""
        fields: dict[str, object] = dump(self)
        return {"alpha": fields.pop("alpha"), "method": fields.pop("method"), **fields}


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
    clustered_on: str | None = None
    """What every test clusters on, e.g. "30 cases" or "3 haystack variants"
    (``rotscope.types.clusters``); absent in records before version 3 (cases)."""
    cluster_note: str | None = None
    """Where clustering on haystack variants changed the verdict that clustering on cases gives:
    what that verdict was."""


class Blocked(Record):
    """A position that keeps a length from being claimed: it did not pass (INCONCLUSIVE, or FAIL)."""

    position: str
    """The position (depth) of the slice."""
    fields: dict[str, str]
    """The case-file slice fields of the slice."""
    verdict: SliceVerdict
    """Its verdict."""
    reason: str
    """Why it did not pass."""


class SupportStep(Record):
    """One length of a task's fixed-sequence support scan."""

    length: Length
    """The length."""
    pooled: PooledTest
    """The pooled tests over that length's slices."""
    holds: bool
    """Every position there passes (none FAILs, none is INCONCLUSIVE) and non-inferiority is shown."""
    why: str
    """Why it does not hold (empty when it does)."""
    blocked_by: list[Blocked] = Field(default_factory=list)
    """The positions there that did not pass (a FAIL, or an INCONCLUSIVE: too few instances, below
    the floor's point estimate): any one blocks the claim at this length; absent in records before."""
    unplaced: Count = 0
    """How many layouts at this length the candidate could not place (each named in the record's
    ``unplaced``): any one blocks the claim at this length; absent when none, and in records before."""


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
    imported: str | None = None
    """Set for a folder made by ``rotscope import``: "imported from FILE (no prompts, spans or
    verification)"; null for a run rotscope ran."""


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
    verdict: SliceVerdict
    """The slice's verdict: FAIL, INCONCLUSIVE (too few cases, below the floor's point) or "not
    shown to fail" (PASS in records before version 3 of the tests)."""
    reason: str
    """Why."""
    within_margin: bool | None = None
    """The slice's own non-inferiority is shown (Holm across slices); false: neither shown to fail
    nor shown within the margin. Absent before version 3 of the tests and for untested slices."""


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


class GateRecord(Record):
    """The release record of a candidate run against a baseline run."""

    score: ScoreName = "accuracy"
    """The score every slice, test and the verdict stand on (``--score``): ``accuracy``, or
    ``likelihood`` (the probability each run's model gave the gold answer); absent before."""
    verdict: Verdict
    """PASS, FAIL or INCONCLUSIVE."""
    exit_code: Literal[0, 1, 3]
    """``rotscope gate``'s exit status: 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    decided_by: list[str]
    """The tests (or reasons: forbidden claims, error rate, unfinished run, no data) that decided it."""
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
    forbidden: ForbiddenClaims | None = None
    """The candidate's replies that state a forbidden claim, a verdict line of its own: any makes the
    gate FAIL (exit 1, ``decided_by`` "forbidden claims"); null where no row carries a claim report
    (not a case-file run); absent in records before."""
    layouts: Layouts
    """Which paired layouts moved under the candidate's tokenizer or template."""
    unplaced: Unplaced | None = None
    """Layouts one run placed and the other could not (a template, tokenizer or injected fault that
    leaves no room), counted and named; such a gate is never a PASS. Null where every layout was
    placed in both."""
    rollback: Rollback | None
    """The rollback guidance of a FAIL; null for any other verdict."""


RECORD = RecordKind(
    "gate", GateRecord, "rotscope gate record", "`rotscope gate`, `CANDIDATE/gate-vs-BASELINE.json`"
)
"""The record as registered (the ``rotscope.records`` entry point)."""
