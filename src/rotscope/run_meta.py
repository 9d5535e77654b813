"""The run store's metadata (``RunStore.meta()``, the ``meta`` table of ``run.db``), typed: each
section a ``TypedDict`` of the keys its writer sets (``total=False`` where an older folder may lack
some), so readers get keys mypy checks. What ``store.py`` stores; kept apart from it so the store's
module stays one job (opening, migrating, reading and writing ``run.db``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from rotscope.types import BackendDescription, Manifest


class RejectionRecord(TypedDict, total=False):
    """One rejected prompt in the run's ``rejections`` metadata (``types.rendering.Rejection`` as
    stored)."""

    task: str
    case_ids: list[str]
    control: bool
    length: int
    depth: float | None
    position: str | None
    filler: str | None
    reason: str


class TokenBounds(TypedDict, total=False):
    """The run's ``tokens`` metadata: the prefill a naive run would do, and the lower bound."""

    naive_prefill: int
    lower_bound: int


class DeviationRecord(TypedDict):
    """One field where the run's manifest deviates from its frozen plan."""

    field: str
    planned: Any
    actual: Any


class PlanRecord(TypedDict, total=False):
    """The run's ``plan`` metadata (``planned.check_plan``): the frozen plan's digest and the
    deviations from it that were allowed."""

    digest: str
    deviations: list[DeviationRecord]


class SessionGeneration(TypedDict, total=False):
    """The run's ``session_generation`` metadata: what writing the model's own sessions cost
    (``self_session.SessionWriter.cost``); a folder from before sessions were priced lacks some keys."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    latency_s: float
    usd: float
    priced: bool
    sessions: int
    turns: int
    note_tokens: int
    files: list[str]


class EngineVerdict(TypedDict):
    """Whether a llama.cpp engine may use extra buffers (``backends.llamacpp.extra_buffers.Verdict``
    as stored)."""

    safe: bool
    reason: str
    buffer_types: list[str]
    probed_at: str


class EngineMeta(TypedDict, total=False):
    """The run's ``engine`` metadata (``run_steps.engine_meta``): how a local engine ran."""

    mode: str
    settings: Any
    worker_process: bool
    crashes: int
    verdict: EngineVerdict | None


class CacheControl(TypedDict, total=False):
    """The run's ``cache_control`` metadata: whether the warm/cold checks were deterministic."""

    deterministic: bool


class ReplicaShard(TypedDict):
    """One replica's shard in one pass of a replicas executor."""

    replica: str
    calls: int
    groups: int
    lower_bound: int
    down: bool


class ReplicaPass(TypedDict):
    """One pass of a replicas executor: each live replica's shard."""

    shards: list[ReplicaShard]


class ReplicaTakenOut(TypedDict):
    """One time a replica was taken out of the pool (``backends.serve.health``)."""

    call: int
    """How many calls the replica had been sent by then (in this session of the run)."""
    after_s: float
    """Seconds from the pool's first connection to the moment it was taken out."""
    reason: str
    back: bool
    """A later probe answered and the replica was put back."""


class ReplicaHealth(TypedDict):
    """A replica's calls and failed calls in one session of the run (a start or a ``--resume``):
    ``calls`` counts each call sent to it, a call moved to it from a failing replica included."""

    replica: str
    calls: int
    failures: int
    taken_out: list[ReplicaTakenOut]


class ReplicaSession(TypedDict):
    """One session of a run on replicas (its start, then each ``--resume``): the replicas it was
    given (``--resume --base-url`` may move them), the passes they served and their health."""

    replicas: list[str]
    servers: list[str | None]
    passes: list[ReplicaPass]
    health: list[ReplicaHealth]


class ReplicasExecutor(TypedDict, total=False):
    """The run's ``executor`` metadata when it ran on server replicas: the last session's replicas,
    passes and health at the top, every session in ``sessions`` (absent in runs from before)."""

    kind: str
    replicas: list[str]
    servers: list[str | None]
    passes: list[ReplicaPass]
    health: list[ReplicaHealth]
    sessions: list[ReplicaSession]


class RayShard(TypedDict):
    """One Ray worker's shard."""

    calls: int
    groups: int
    lower_bound: int


class RayExecutor(TypedDict):
    """The run's ``executor`` metadata when it ran on Ray workers."""

    kind: str
    address: str | None
    workers: int
    shards: list[RayShard]
    lost_workers: int


class ImportedMeta(TypedDict, total=False):
    """The ``imported`` metadata of a run folder made by ``rotscope import``: the file it came from."""

    source: str
    format: str
    sha256: str
    items: int
    ignored_columns: list[str]
    unit: str
    binned_lengths: list[int]
    model_column: str


class SessionMeta(TypedDict, total=False):
    """The ``pair`` or ``session`` metadata of one subject of a paired or ``--models`` session,
    with the key naming the folder's own subject (``role`` or ``subject``)."""

    subjects: dict[str, str]
    names: dict[str, str | None]
    folder: str
    seed: int
    seeds: str
    prompts: str
    grouping: dict[str, str]
    order: list[list[str | list[str]]]
    accepted_upgrade: str
    role: str
    subject: str


class RunMeta(TypedDict, total=False):
    """A run store's metadata (``RunStore.meta``): each key as a run writes it; a folder written by
    an older rotscope, an import or a run cut short lacks some."""

    run_id: str
    rotscope_version: str
    config: dict[str, Any]
    config_digest: str
    model: str
    backend: BackendDescription
    corpus: dict[str, Any] | None
    rejected: list[str]
    rejections: list[RejectionRecord]
    tokens: TokenBounds
    order: str
    identity: dict[str, Any]
    manifest: Manifest
    manifest_digest: str
    plan: PlanRecord
    session_generation: SessionGeneration
    engine: EngineMeta | None
    cache_control: CacheControl
    executor: ReplicasExecutor | RayExecutor
    imported: ImportedMeta
    score: str
    """What each row keeps: ``accuracy``, ``likelihood`` or ``both`` (absent in runs from before)."""
    pair: SessionMeta
    session: SessionMeta
