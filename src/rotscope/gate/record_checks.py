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
