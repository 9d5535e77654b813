"""Running work items: the runner, executors (in-process and the engine worker process), cost,
limits, the response cache, the delivery check, cache controls and the machine check (doctor).

Named ``execution`` rather than ``run``: ``rotscope.run`` is the library's function (design.md).
The names below load on first use, so the engine worker (``python -m rotscope.execution.worker``)
starts without importing the planner. ``dry_run`` is imported from its module
(``rotscope.execution.dry_run``): the package attribute of that name is the module."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rotscope.execution.dry_run import DryRun, freeze_plan
    from rotscope.execution.runner import (
        BudgetReached,
        EngineStopped,
        Interrupted,
        resume_experiment,
        run_experiment,
    )
    from rotscope.execution.worker import WorkerBackend

_PUBLIC = {
    "BudgetReached": "runner",
    "DryRun": "dry_run",
    "EngineStopped": "runner",
    "Interrupted": "runner",
    "WorkerBackend": "worker",
    "freeze_plan": "dry_run",
    "resume_experiment": "runner",
    "run_experiment": "runner",
}
__all__ = [
    "BudgetReached",
    "DryRun",
    "EngineStopped",
    "Interrupted",
    "WorkerBackend",
    "freeze_plan",
    "resume_experiment",
    "run_experiment",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"rotscope.execution.{module}"), name)
