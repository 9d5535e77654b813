"""The gate record's checks beside the verdict: each case's worst position, claim counts, which
paired layouts moved under the candidate's tokenizer or template, and a FAIL's rollback."""

from __future__ import annotations

from typing import Any, Literal

from rotscope.records._base import Count, Record, Share


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


class ForbiddenClaims(Record):
    """The candidate's replies that state a forbidden claim (case-file runs): a verdict line of its
    own, FAIL and exit 1 whenever there is one, whatever the tests say (docs/gates.md). Claim ids
    and counts only, never a reply's text."""

    claims: dict[str, Count]
    """Per forbidden claim id, the candidate's replies that state it."""
    replies: Count
    """The candidate's replies that state at least one forbidden claim."""
    checked: Count
    """The candidate's replies checked for claims (rows with a claim report)."""
    line: str
    """The verdict line, in words."""


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
    spans_known: bool = True
    """Both runs hold their prompts' token spans; false where either was imported from another
    harness (``rotscope import``): no layout is then said to have moved, only answers changed."""
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


class TaskAdvice(Record):
    """Without the baseline, what one task (and its slice fields) may still be used for."""

    task: str
    """The task family, with its case-file slice fields where the slices are split by them
    (``cases risk=high``)."""
    supported_up_to: int | None
    """The longest length the candidate still supports for the task (the record's
    ``supported_up_to``: every position passes there and at every shorter length); null: none."""
    accuracy: dict[str, Share | None]
    """The candidate's accuracy per tested length (instance mean over the positions there, the
    evidence-only control under ``evidence-only``)."""
    refuse: bool
    """Its accuracy is below the threshold at every tested length: refuse the task."""
    retrieval: bool
    """Retrieval to a shorter context is advised: some tested length is not supported, and the
    candidate answers the short input (the evidence-only control, else the shortest length) at or
    above the threshold."""
    why: str
    """The advice in words, from these numbers."""


class WithoutBaseline(Record):
    """What to do when the baseline can no longer be restored, computed from the candidate's
    measured data (the gate study: reduce the permitted window, retrieve to a short context, refuse
    the tasks it cannot do)."""

    threshold: Share
    """The accuracy below which a task is refused, and at or above which a short input counts as
    answered: the plan's floor (``gate.floor``)."""
    largest_supported: int | None
    """The largest length every task that is not refused still supports (the window to permit);
    null: some such task has no supported length, or every task is refused."""
    retrieval_advised: bool
    """Retrieval to a shorter context is advised for at least one task."""
    refuse: list[str]
    """The tasks to refuse (accuracy below the threshold at every length)."""
    tasks: list[TaskAdvice]
    """Each task's advice."""


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
    cases_command: str | None
    """The command that keeps the newly failing layouts as pinned cases; null where the candidate
    was imported (it holds no prompts or layouts to pin)."""
    steps: list[str]
    """The steps, in words."""
    without_baseline: WithoutBaseline | None = None
    """What to do when the baseline is no longer available, from the candidate's measured data;
    absent in records before."""


class UnplacedLayout(Record):
    """A layout one run placed and measured and the other could not place (its verifier, or an
    injected fault, rejected it): never sent there, so it has no pair."""

    task: str
    """The task family."""
    case_id: str
    """The case."""
    length: int
    """The prompt length asked."""
    position: str
    """The position asked (its name, offset or depth)."""
    unplaced_in: Literal["baseline", "candidate"]
    """The run that could not place it."""
    reason: str
    """Why, as that run's ``rejections.jsonl`` says."""


class Unplaced(Record):
    """Layouts placed in one run and not in the other, counted and named (``gate/unplaced``)."""

    count: Count
    """How many (each once, whatever its trials)."""
    layouts: list[UnplacedLayout]
    """Each, in the order of the baseline's rows."""
