"""The Ray executor (``executor: {kind: ray}``, ``rotscope run --executor ray``): a local engine's
replicas on Ray actors, the grid sharded over them by shared prefix.

This process plans and verifies every prompt (the spans stay exact), scores, judges, and is the
only writer of the run store: the actors get a request and send back a completion, nothing else.
The calls are cut into prefix groups (subtrees of the token trie, ``prefix_groups``), and the
groups dealt to the workers by token weight (heaviest first, to the lightest-loaded worker); each
worker runs its groups in trie order, so each replica reuses its own KV cache and the prefill of
all of them stays within a few percent of the trie's lower bound. A batching engine's replica
(``BatchingBackend``: vLLM) is handed its shard in chunks of ``batch_size`` consecutive calls, as
the in-process path hands the engine the run's order.

An actor that dies (its process killed, its node lost) turns the call it was running into an error
row, which ``--resume`` runs again; a fresh actor takes over that worker's remaining calls. After
``executor.max_crashes`` losses in a row on one worker the run stops (exit 5) with every finished
row kept. Each item runs on exactly one worker, once, so no row is lost or written twice.

Ray is an optional extra (``pip install rotscope[ray]``), imported only here and only when used.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, TypedDict, TypeVar

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput, EngineCrashed
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Execution, Reporter, local_caller, make_judge
from rotscope.execution.calls.likelihood import run_score
from rotscope.execution.calls.limits import Limiters
from rotscope.plan.schedule import prefill_bounds, prefix_groups, prefix_order
from rotscope.run_meta import RayExecutor
from rotscope.store import RunStore
from rotscope.types import (
    Backend,
    BackendDescription,
    BatchingBackend,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    ReadsLikelihood,
    ReadsLikelihoodBatch,
    Tokenizer,
    WorkItem,
)

_INSTALL = "pip install rotscope[ray]"


def require_ray() -> ModuleType:
    """The ``ray`` module, or bad input naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise BadInput(f"executor: kind ray needs the ray package: {_INSTALL}") from None
    return ray


def check_ray(backend: Backend, config: ExperimentConfig) -> None:
    """Refuse, before anything is written, what the Ray executor cannot run: no ray installed, a
    remote API (its calls run on the event loop, limited by its provider), an engine that cannot be
    sent to a worker."""
    ray = require_ray()
    if not backend.capabilities.local:
        raise BadInput(
            f"executor: kind ray runs local engines; {config.model} is a remote API "
            "(its calls run concurrently on the event loop): use kind auto"
        )
    try:
        ray.cloudpickle.dumps(backend)
    except Exception as error:
        raise BadInput(f"model: {config.model} cannot be sent to a Ray worker ({error})") from None


class RayInit(TypedDict, total=False):
    """The options ``ray.init`` is called with: a local Ray's CPUs, or the cluster's address."""

    include_dashboard: bool
    log_to_driver: bool
    logging_level: int
    configure_logging: bool
    num_cpus: int
    address: str


@dataclass(frozen=True)
class Shard:
    """One worker's calls, in trie order, and the prefill its own cache needs at least."""

    items: list[WorkItem]
    groups: int
    weight: int


def shard(items: Sequence[WorkItem], workers: int) -> list[Shard]:
    """``items`` cut into prefix groups and dealt to at most ``workers`` shards by weight (a group's
    distinct-prefix tokens, heaviest first, each to the lightest shard so far); each shard's items
    in trie order. A grid with fewer groups than workers leaves the other workers idle."""
    token_ids = [item.prompt.token_ids for item in items]
    groups = prefix_groups(token_ids)
    weights = [prefill_bounds([token_ids[i] for i in group])[1] for group in groups]
    members: list[list[int]] = [[] for _ in range(min(workers, len(groups)))]
    loads = [0] * len(members)
    counts = [0] * len(members)
    for number in sorted(range(len(groups)), key=lambda g: (-weights[g], groups[g][0])):
        lightest = min(range(len(members)), key=lambda k: (loads[k], k))
        members[lightest].extend(groups[number])
        loads[lightest] += weights[number]
        counts[lightest] += 1
    shards = []
    for indices, count in zip(members, counts, strict=True):
        ordered = [indices[i] for i in prefix_order([token_ids[i] for i in indices])]
        ordered_ids = [token_ids[i] for i in ordered]
        shards.append(Shard([items[i] for i in ordered], count, prefill_bounds(ordered_ids)[1]))
    return shards


class ReplicaActor:
    """What runs in a Ray actor: one replica of the engine, answering one request at a time, or one
    chunk at a time for a batching engine (ended with its process by ``ray.kill``, which frees the
    engine with it)."""

    def __init__(self, engine: Backend) -> None:
        self.engine = engine
        resolve_here = getattr(engine, "resolve_here", None)
        if resolve_here is not None:  # the threads left unset are this node's, not the driver's
            resolve_here()

    def generate(self, request: GenerateRequest) -> Completion:
        return asyncio.run(self.engine.generate(request))

    def generate_batch(self, requests: Sequence[GenerateRequest]) -> list[Completion]:
        """A chunk of the shard at once, for a batching engine (``BatchingBackend``: vLLM)."""
        engine = self.engine
        if not isinstance(engine, BatchingBackend):
            return [asyncio.run(engine.generate(request)) for request in requests]
        return list(asyncio.run(engine.generate_batch(requests)))

    def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """The engine's reading of the answer's likelihood (its KV cache is here)."""
        engine = self.engine
        if not isinstance(engine, ReadsLikelihood):
            return Likelihood(error=f"{engine.model_id}: reads no likelihoods")
        return asyncio.run(engine.likelihood(request))

    def likelihood_batch(self, requests: Sequence[LikelihoodRequest]) -> list[Likelihood]:
        """A chunk's readings at once, for an engine that reads them in batches (vLLM)."""
        engine = self.engine
        if not isinstance(engine, ReadsLikelihoodBatch):
            return [self.likelihood(request) for request in requests]
        return list(asyncio.run(engine.likelihood_batch(requests)))

    def clear_cache(self) -> None:
        clear = getattr(self.engine, "clear_cache", None)
        if clear is not None:
            clear()


_Answer = TypeVar("_Answer", Completion, Likelihood)


def _lost_call(error: str, mode: str | None) -> Completion:
    return Completion(text="", error=error, engine_mode=mode)


def _lost_reading(error: str, mode: str | None) -> Likelihood:
    return Likelihood(error=error)


class Replica:
    """The run's end of one worker: a backend whose calls go to its actor, started on first use and
    started again after the actor is lost (the lost call an error row)."""

    def __init__(self, pool: RayPool, number: int) -> None:
        self.pool = pool
        self.number = number
        self.engine = pool.engine
        self.model_id = pool.model_id
        self.context_window = pool.context_window
        self.capabilities = pool.capabilities
        self.lost = 0
        self.lost_in_a_row = 0
        self._actor: Any = None
        self.batch_size = int(getattr(pool.engine, "batch_size", 1))
        """A batching engine's chunk: the executor hands this replica that many calls at once."""

    def tokenizer(self) -> Tokenizer:
        return self.engine.tokenizer()

    def describe(self) -> BackendDescription:
        return self.engine.describe()

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        self.pool.reserve(max_prompt_tokens, max_new_tokens)

    def actor(self) -> Any:
        if self._actor is None:
            self._actor = self.pool.start_actor()
        return self._actor

    async def generate(self, request: GenerateRequest) -> Completion:
        return (await self._on_actor("generate", [request]))[0]

    async def generate_batch(self, requests: Sequence[GenerateRequest]) -> list[Completion]:
        """``requests`` sent to the actor together (a batching engine schedules them itself); a
        lost actor makes each of them an error row, as it does a single call."""
        return await self._on_actor("generate_batch", list(requests))

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        return (await self._on_actor("likelihood", [request], _lost_reading))[0]

    async def likelihood_batch(self, requests: Sequence[LikelihoodRequest]) -> list[Likelihood]:
        """A chunk's readings sent to the actor together; a lost actor makes each an error row."""
        return await self._on_actor("likelihood_batch", list(requests), _lost_reading)

    async def _on_actor(
        self,
        method: str,
        requests: list[Any],
        failed: Callable[[str, str | None], _Answer] = _lost_call,  # type: ignore[assignment]
    ) -> list[_Answer]:
        """``method`` of the actor on ``requests`` (one request for a single call's method, the
        list for a ``*_batch`` method); a lost actor or a Ray fault makes each request's answer
        ``failed(error, engine mode)``."""
        ray = self.pool.ray
        max_crashes = self.pool.executor.max_crashes
        if self.lost_in_a_row >= max_crashes:
            raise EngineCrashed(f"Ray worker {self.number} was lost {self.lost_in_a_row} times in a row")
        mode = getattr(self.engine, "engine_mode", None)
        single = not method.endswith("_batch")
        try:
            remote = getattr(self.actor(), method)
            answer = await (remote.remote(requests[0]) if single else remote.remote(requests))
        except ray.exceptions.RayActorError as lost:
            self.stop()
            self.lost += 1
            self.lost_in_a_row += 1
            cause = _first_line(lost)
            calls = (
                "its call is an error row"
                if len(requests) == 1
                else f"its {len(requests)} calls are error rows"
            )
            self.pool.notice(
                f"Ray worker {self.number} was lost ({cause}); {calls}, a fresh worker "
                f"takes its other calls (loss {self.lost_in_a_row} in a row of at most {max_crashes})"
            )
            return [failed(f"ray worker lost: {cause}", mode) for _ in requests]
        except ray.exceptions.RayError as error:
            return [failed(f"ray worker: {_first_line(error)}", mode) for _ in requests]
        self.lost_in_a_row = 0
        return [answer] if single else list(answer)

    def clear_cache(self) -> None:
        if self._actor is not None:
            self.pool.ray.get(self._actor.clear_cache.remote())

    def stop(self) -> None:
        """End this worker's actor (a lost one, or at the end of the run)."""
        actor, self._actor = self._actor, None
        if actor is not None:
            self.pool.ray.kill(actor, no_restart=True)

    def close(self) -> None:
        self.stop()


class RayPool:
    """A local engine run on Ray workers: the run's backend for planning (tokenizer, identity), and
    the executor of its calls (``execute``). Ray starts, and the actors with it, at the first call;
    both end with ``close``. Each worker keeps its actor (and so its KV cache) across the batches
    of a session."""

    def __init__(self, engine: Backend, config: ExperimentConfig, reporter: Reporter | None = None) -> None:
        check_ray(engine, config)
        self.engine = engine
        self.executor = config.executor
        self.reporter = reporter
        self.model_id = engine.model_id
        self.context_window = engine.context_window
        self.capabilities = replace(engine.capabilities, worker_process=False)
        self.ray = require_ray()
        self._started_ray = False
        self._replicas: list[Replica] = []

    @property
    def engine_mode(self) -> str | None:
        mode = getattr(self.engine, "engine_mode", None)
        return None if mode is None else str(mode)

    @property
    def crashes(self) -> int:
        """Workers lost over the session (the run's ``engine`` metadata counts them as crashes)."""
        return sum(replica.lost for replica in self._replicas)

    def tokenizer(self) -> Tokenizer:
        return self.engine.tokenizer()

    def describe(self) -> BackendDescription:
        return self.engine.describe()

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        self.engine.reserve(max_prompt_tokens, max_new_tokens)
        for replica in self._replicas:
            replica.stop()  # sized for other prompts: the next call starts a fresh actor

    def notice(self, message: str) -> None:
        if self.reporter is not None:
            self.reporter.notice(message)

    def connect(self) -> None:
        """Join or start Ray and check it has room for the workers."""
        ray, executor = self.ray, self.executor
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no network at run time
            # Ray starts its workers at niceness 15; the replicas are the run's engine, and at 15 a
            # machine's other work takes their cores (an in-process engine runs at 0).
            os.environ.setdefault("RAY_worker_niceness", "0")
            options: RayInit = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.ERROR,
                "configure_logging": True,
            }
            if executor.address is None:
                options["num_cpus"] = max(executor.workers, os.cpu_count() or 1)
            else:
                options["address"] = executor.address
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise BadInput(f"executor.address {executor.address}: {_first_line(error)}") from None
            self._started_ray = True
        resources = ray.cluster_resources()
        wanted = (("CPU", 1.0, "workers"), ("GPU", executor.gpus_per_worker, "gpus_per_worker"))
        for name, each, field in wanted:
            needed = executor.workers * each
            if needed > resources.get(name, 0.0):
                raise BadInput(
                    f"executor.{field}: {executor.workers} workers need {needed:g} {name}s, "
                    f"the Ray cluster has {resources.get(name, 0.0):g}"
                )

    def start_actor(self) -> Any:
        remote = self.ray.remote(ReplicaActor).options(
            num_cpus=1, num_gpus=self.executor.gpus_per_worker, max_restarts=0, max_concurrency=1
        )
        return remote.remote(self.engine)

    def replicas(self, count: int) -> list[Replica]:
        """The first ``count`` workers (made as needed; Ray joined on first use)."""
        if not self._replicas:
            self.connect()
        while len(self._replicas) < count:
            self._replicas.append(Replica(self, len(self._replicas)))
        return self._replicas[:count]

    async def execute(
        self,
        config: ExperimentConfig,
        items: Sequence[WorkItem],
        judge_backend: Backend | None,
        store: RunStore,
        reporter: Reporter | None,
        budget: Budget | None = None,
    ) -> bool:
        """Run ``items`` sharded over the workers, recording each call here as it comes back; True
        when the budget (``budget``, shared with other batches, or the run's own) stopped it."""
        shards = shard(items, self.executor.workers)
        if not shards:
            return False
        budget = budget or Budget(config.max_cost, spent=store.spent())
        lanes = [
            (local_caller(replica, config, budget), part.items)
            for replica, part in zip(self.replicas(len(shards)), shards, strict=True)
        ]
        judge = make_judge(config, judge_backend, budget, Limiters(config.limits))
        score = run_score(config.score, lanes[0][0].backend)
        execution = Execution(lanes[0][0], store, judge=judge, reporter=reporter, score=score)
        self.notice(
            f"running {len(items)} calls on {len(shards)} Ray workers: "
            + ", ".join(f"{len(part.items)} calls in {part.groups} prefix groups" for part in shards)
        )
        try:
            await execution.run_lanes(lanes)
        finally:
            store.set_meta({"executor": self.record(shards)})
            if judge is not None and judge.caller.cache is not None:
                judge.caller.cache.close()
        return execution.stopped_at_budget

    def record(self, shards: Sequence[Shard]) -> RayExecutor:
        """The run's ``executor`` metadata: workers, their shards, the workers lost."""
        return {
            "kind": "ray",
            "address": self.executor.address,
            "workers": self.executor.workers,
            "shards": [
                {"calls": len(part.items), "groups": part.groups, "lower_bound": part.weight}
                for part in shards
            ],
            "lost_workers": self.crashes,
        }

    async def generate(self, request: GenerateRequest) -> Completion:
        """One call outside a sharded batch (the cache controls) on the first worker."""
        return await self.replicas(1)[0].generate(request)

    def clear_cache(self) -> None:
        for replica in self._replicas:
            replica.clear_cache()

    def close(self) -> None:
        try:
            for replica in self._replicas:
                replica.close()
            self._replicas = []
            if self._started_ray:
                self.ray.shutdown()
                self._started_ray = False
        finally:
            self.engine.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


__all__ = ["RayPool", "Replica", "ReplicaActor", "Shard", "check_ray", "require_ray", "shard"]
