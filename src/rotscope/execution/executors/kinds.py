"""Executors as a registered kind: how a run's calls are executed (in-process, an engine worker
process, Ray workers, a pool of served replicas). Each kind says when it applies to a backend
under an experiment's ``executor:`` section, how it wraps the backend the run is planned with,
and how it executes a batch of work items; ``run_steps`` asks ``executor_for`` and never names a
kind. A new executor is one module that calls ``register_executor`` (and one import in
``rotscope.execution.executors``), ARCHITECTURE.md, "Executors"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.calls.limits import Limiters
from rotscope.store import RunStore
from rotscope.types import Backend, WorkItem


@dataclass(frozen=True)
class Batch:
    """One batch of a run's calls, with what they share: the run's config and store, the judge,
    the reporter, and the limiters and budget a session's subjects share."""

    config: ExperimentConfig
    items: Sequence[WorkItem]
    backend: Backend
    judge_backend: Backend | None
    store: RunStore
    reporter: Reporter | None
    limiters: Limiters | None = None
    budget: Budget | None = None


@dataclass(frozen=True)
class ExecutorKind:
    """An executor: ``applies(backend, config)`` says whether it runs this backend's calls (kinds are
    asked in order of ``priority``, highest first); ``wrap`` gives the backend the run is planned
    with and calls go through; ``execute`` runs a batch and says whether the budget stopped it.
    ``worker_process``: the engine runs outside the run's process (the run's ``engine`` record)."""

    name: str
    priority: int
    applies: Callable[[Backend, ExperimentConfig], bool]
    wrap: Callable[[Backend, ExperimentConfig, Reporter | None], Backend]
    execute: Callable[[Batch], Awaitable[bool]]
    worker_process: bool = False
    starting: str | None = None
    """What the run says when its store opens (the worker's start), if anything."""


_KINDS: dict[str, ExecutorKind] = {}


def register_executor(kind: ExecutorKind) -> ExecutorKind:
    """Add ``kind``; a name registered twice is a programming error."""
    if kind.name in _KINDS:
        raise ValueError(f"executor {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def executor_kinds() -> list[ExecutorKind]:
    """Every registered executor, in the order they are asked."""
    return sorted(_KINDS.values(), key=lambda kind: -kind.priority)


def executor_for(backend: Backend, config: ExperimentConfig) -> ExecutorKind:
    """The executor of ``backend``'s calls under ``config``: the first registered kind that applies."""
    for kind in executor_kinds():
        if kind.applies(backend, config):
            return kind
    raise LookupError(f"no executor applies to {backend.model_id} (executor.kind {config.executor.kind})")
