"""The frozen analysis plan's shape (``rotscope.plan.manifest.build_manifest``): a ``Manifest`` of
groups, held by the run (``RunMeta.manifest``), a dry run, ``rotscope plan`` and a session's
record. A manifest read from a file frozen by an older version may lack keys: what walks any
version (``read_manifest``, ``read_as_today``) reads it as a plain mapping."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class ManifestGrid(TypedDict):
    """What is measured: the tasks, lengths and positions, each cell's repetitions."""

    tasks: list[str]
    lengths: list[int]
    positions: list[float | str]
    repetitions: int
    limit: int | None
    controls: bool
    questions_per_prompt: int
    placement: dict[str, Any]
    """The resolved ``placement`` section as the config dumps it."""


class ManifestSeeds(TypedDict):
    layout: int
    generation: int


class ManifestDecoding(TypedDict):
    temperature: float
    max_tokens: int
    """``generation.max_tokens`` where set, else the largest reply budget of the planned items."""
    reply_budgets: NotRequired[dict[str, int]]
    """Where ``generation.max_tokens`` is unset and some item's budget is not
    ``DEFAULT_MAX_TOKENS``: the largest budget of each answer kind's items (a plan of one budget
    leaves it out, as plans frozen before budgets per kind)."""


class ManifestCases(TypedDict):
    digest: str
    count: int


class ManifestFiller(TypedDict):
    source: str | None
    digest: str | None


class ManifestSubject(TypedDict):
    """What is being tested: model, tokenizer, chat template, system prompt, assembler, engine."""

    model: str
    backend: str | None
    model_digest: str | None
    tokenizer: str
    tokenizer_digest: str
    template_digest: str
    system_prompt_digest: str | None
    assembler_digest: str
    rotscope_version: str
    engine: dict[str, Any] | None
    """The backend's options as its description dumps them (``BackendDescription.options``)."""


class SliceShape(TypedDict):
    """How many gate slices a plan fills, the fewest instances one holds, the clusters in all."""

    slices: int
    instances_per_slice: int
    clusters: int


class ManifestPlanned(SliceShape):
    """The verified work items and rejected prompts, with the plan's slice shape."""

    work_items: int
    rejected_prompts: int


class Manifest(TypedDict):
    """A manifest as today's ``build_manifest`` writes it, its groups in the order deviations are
    reported."""

    manifest_version: int
    grid: ManifestGrid
    seeds: ManifestSeeds
    decoding: ManifestDecoding
    analysis: dict[str, Any]
    """The resolved ``gate`` section as the config dumps it."""
    cases: ManifestCases
    filler: ManifestFiller
    subject: ManifestSubject
    planned: ManifestPlanned
    config: dict[str, Any]
    """The whole resolved config as it dumps it, less the pacing fields."""
