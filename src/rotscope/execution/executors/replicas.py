"""A pool of server replicas of one model (``serve/NAME --base-url URL1,URL2``): whole prefix groups
dealt to one replica each, heaviest first to the least-loaded by token weight (the Ray executor's
``shard``), each replica's groups in trie order, so every replica's prefix cache warms once per
group; ``serve.concurrency`` calls in flight per replica.

A replica that fails is taken out of the pool by the backend (``serve.unhealthy_after`` failed
calls in a row, or no answer even to ``GET /v1/models``): each failed call was already sent again
to a replica in the pool, its lane stops taking calls, and once the pass ends the calls it had left
(whole prefix groups, dealt again by the same sharding) go to the replicas in the pool; a replica
taken out is probed again at the start of a later pass (``serve.probe_after_s``). A call no replica
could answer stays an error or pending row, which ``--resume`` completes (``--resume --base-url``
may name other replicas: each session's replicas, passes and health are kept in the run's
``executor`` metadata, ``sessions``). The run's process records
every row (the replicas only answer), so the store keeps one writer and a row is never written by
two replicas.

The run's score is resolved again once the replicas have answered (``run_score`` after
``connect``): a pool whose detected kind reads no likelihoods refuses a run that asked for one
before any call, and a run that asked for nothing keeps the replies alone, as its metadata then says.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from rotscope.backends.serve.health import health_line
from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Caller, Execution, Reporter, local_caller, make_judge
from rotscope.execution.calls.likelihood import run_score
from rotscope.execution.calls.limits import Limiters
from rotscope.execution.executors.ray_executor import Shard, shard
from rotscope.run_meta import ReplicaHealth, ReplicaPass, ReplicaSession, ReplicasExecutor
from rotscope.store import RunStore
from rotscope.types import (
    Backend,
    BackendDescription,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    Tokenizer,
    WorkItem,
)


@runtime_checkable
class ReplicatedBackend(Protocol):
    """A backend whose calls go to one of several replicas (``backends.serve.ServeBackend``)."""

    model_id: str
    context_window: int
    concurrency: int

    async def connect(self) -> list[int]:
        """The numbers of the replicas that are up (raises when none is)."""
        ...

    async def generate_on(self, number: int, request: GenerateRequest) -> Completion: ...

    async def likelihood_on(self, number: int, request: LikelihoodRequest) -> Likelihood: ...

    def down_reason(self, number: int) -> str | None: ...

    def replica_health(self) -> list[ReplicaHealth]: ...

    def replica_urls(self) -> list[str]: ...

    def replica_kinds(self) -> list[str | None]: ...


class OnReplica:
    """The backend as one replica's lane sees it: every call goes to replica ``number``."""

    def __init__(self, pool: Any, number: int) -> None:
        self.pool = pool
        self.number = number
        self.model_id = pool.model_id
        self.context_window = pool.context_window
        self.capabilities = pool.capabilities
        self.likelihood_refusal: str | None = getattr(pool, "likelihood_refusal", None)

    def tokenizer(self) -> Tokenizer:
        tokenizer: Tokenizer = self.pool.tokenizer()
        return tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    async def generate(self, request: GenerateRequest) -> Completion:
        completion: Completion = await self.pool.generate_on(self.number, request)
        return completion

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        read: Likelihood = await self.pool.likelihood_on(self.number, request)
        return read

    def describe(self) -> BackendDescription:
        described: BackendDescription = self.pool.describe()
        return described

    def close(self) -> None:
        return None


class WhileUp:
    """A replica's calls in order, shared by its lanes, ending as soon as the replica is down (the
    calls left stay pending for the next pass)."""

    def __init__(self, pool: ReplicatedBackend, number: int, items: Sequence[WorkItem]) -> None:
        self.pool = pool
        self.number = number
        self._items = iter(items)

    def __iter__(self) -> Iterator[WorkItem]:
        return self

    def __next__(self) -> WorkItem:
        if self.pool.down_reason(self.number) is not None:
            raise StopIteration
        return next(self._items)


async def execute_on_replicas(
    config: ExperimentConfig,
    items: Sequence[WorkItem],
    pool: ReplicatedBackend,
    judge_backend: Backend | None,
    store: RunStore,
    reporter: Reporter | None,
    budget: Budget | None = None,
) -> bool:
    """Run ``items`` on the pool's replicas, recording each call here as it comes back; True when
    the budget stopped it. Passes repeat while a replica went down during one and calls are left."""
    budget = budget or Budget(config.max_cost, spent=store.spent())
    judge = make_judge(config, judge_backend, budget, Limiters(config.limits))
    urls = pool.replica_urls()
    todo = list(items)
    passes: list[ReplicaPass] = []
    before = store.meta().get("executor") or {}
    sessions: list[ReplicaSession] = []
    if before.get("kind") == "replicas":  # a resumed run: its earlier sessions are kept
        sessions = list(cast(ReplicasExecutor, before).get("sessions") or [])
    try:
        while todo:
            live = await pool.connect()
            shards = shard(todo, len(live))
            lanes: list[tuple[Caller, Iterator[WorkItem]]] = []
            for number, part in zip(live, shards, strict=False):
                caller = local_caller(OnReplica(pool, number), config, budget)
                lanes += [(caller, WhileUp(pool, number, part.items))] * max(1, pool.concurrency)
            _notice(reporter, _dealt(urls, live, shards))
            score = run_score(config.score, lanes[0][0].backend)  # the pool's kind is known now
            store.set_meta({"score": score})
            execution = Execution(lanes[0][0], store, judge=judge, reporter=reporter, score=score)
            await execution.run_lanes(lanes)
            lost = [number for number in live if pool.down_reason(number) is not None]
            passes.append(_pass_record(urls, live, shards, lost))
            if execution.stopped_at_budget:
                return True
            if not lost:
                break
            unfinished = store.unfinished()
            todo = [
                item
                for number, part in zip(live, shards, strict=False)
                if number in lost
                for item in part.items
                if item.item_id in unfinished
            ]
            for number in lost:
                _notice(
                    reporter,
                    f"replica {urls[number]} is out of the pool ({pool.down_reason(number)}); "
                    f"{len(todo)} unfinished calls go to the replicas in it",
                )
    finally:
        health = pool.replica_health()
        session: ReplicaSession = {
            "replicas": urls,
            "servers": pool.replica_kinds(),
            "passes": passes,
            "health": health,
        }
        executor: ReplicasExecutor = {
            "kind": "replicas",
            "replicas": urls,
            "servers": pool.replica_kinds(),
            "passes": passes,
            "health": health,
            "sessions": [*sessions, session],
        }
        store.set_meta({"executor": executor})
        for record in health:
            _notice(reporter, f"replica {health_line(record)}")
        if judge is not None and judge.caller.cache is not None:
            judge.caller.cache.close()
    return False


def _dealt(urls: Sequence[str], live: Sequence[int], shards: Sequence[Shard]) -> str:
    parts = ", ".join(
        f"{urls[number]}: {len(part.items)} calls in {part.groups} prefix groups"
        for number, part in zip(live, shards, strict=False)
    )
    return f"running {sum(len(part.items) for part in shards)} calls on {len(shards)} replicas: {parts}"


def _pass_record(
    urls: Sequence[str], live: Sequence[int], shards: Sequence[Shard], lost: Sequence[int]
) -> ReplicaPass:
    """One pass of the run's ``executor`` metadata: each replica's shard and whether it went down."""
    return {
        "shards": [
            {
                "replica": urls[number],
                "calls": len(part.items),
                "groups": part.groups,
                "lower_bound": part.weight,
                "down": number in lost,
            }
            for number, part in zip(live, shards, strict=False)
        ]
    }


def _notice(reporter: Reporter | None, message: str) -> None:
    if reporter is not None:
        reporter.notice(message)


__all__ = ["OnReplica", "ReplicatedBackend", "WhileUp", "execute_on_replicas"]
