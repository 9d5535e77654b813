"""The built-in executors, registered as an outside one would be (``kinds.register_executor``):
Ray workers when ``executor.kind`` is ``ray``; a pool of served replicas for a backend whose calls
go to replicas (``serve/NAME``); an engine worker process for a local engine that can run in one
(``executor.kind`` ``auto``); in-process otherwise. Imported by ``run_steps``, not by the package,
so the worker process (``python -m rotscope.execution.executors.worker``) starts without them."""

from __future__ import annotations

from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.calls.execute import Reporter, execute_items
from rotscope.execution.executors.kinds import Batch, ExecutorKind, register_executor
from rotscope.execution.executors.ray_executor import RayPool
from rotscope.execution.executors.replicas import ReplicatedBackend, execute_on_replicas
from rotscope.execution.executors.worker import WorkerBackend
from rotscope.types import Backend


async def _on_ray(batch: Batch) -> bool:
    if not isinstance(batch.backend, RayPool):
        raise TypeError("the ray executor runs a RayPool")
    return await batch.backend.execute(
        batch.config, batch.items, batch.judge_backend, batch.store, batch.reporter, batch.budget
    )


async def _on_replicas(batch: Batch) -> bool:
    if not isinstance(batch.backend, ReplicatedBackend):
        raise TypeError("the replicas executor runs a replicated backend")
    return await execute_on_replicas(
        batch.config,
        batch.items,
        batch.backend,
        batch.judge_backend,
        batch.store,
        batch.reporter,
        batch.budget,
    )


async def _local(batch: Batch) -> bool:
    return await execute_items(
        batch.config,
        batch.items,
        batch.backend,
        batch.judge_backend,
        batch.store,
        batch.reporter,
        batch.limiters,
        batch.budget,
    )


def _as_is(backend: Backend, config: ExperimentConfig, reporter: Reporter | None) -> Backend:
    return backend


def _worker(backend: Backend, config: ExperimentConfig, reporter: Reporter | None) -> Backend:
    notice = reporter.notice if reporter is not None else None
    return WorkerBackend(backend, max_crashes=config.executor.max_crashes, notice=notice)


def _ray_pool(backend: Backend, config: ExperimentConfig, reporter: Reporter | None) -> Backend:
    return RayPool(backend, config, reporter)


RAY = register_executor(
    ExecutorKind(
        "ray",
        priority=30,
        applies=lambda backend, config: config.executor.kind == "ray",
        wrap=_ray_pool,
        execute=_on_ray,
    )
)
REPLICAS = register_executor(
    ExecutorKind(
        "replicas",
        priority=20,
        applies=lambda backend, config: isinstance(backend, ReplicatedBackend),
        wrap=_as_is,
        execute=_on_replicas,
    )
)
WORKER = register_executor(
    ExecutorKind(
        "worker",
        priority=10,
        applies=lambda backend, config: (
            config.executor.kind == "auto" and backend.capabilities.worker_process
        ),
        wrap=_worker,
        execute=_local,
        worker_process=True,
        starting="starting the engine in a worker process (a crash there is an error row)",
    )
)
IN_PROCESS = register_executor(
    ExecutorKind("inprocess", priority=0, applies=lambda backend, config: True, wrap=_as_is, execute=_local)
)
