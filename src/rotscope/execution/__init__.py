"""Running work items: the runner, executors (in-process and the engine worker process), cost,
limits, the response cache, the delivery check, cache controls and the machine check (doctor).

Named ``execution`` rather than ``run``: ``rotscope.run`` is the library's function (ARCHITECTURE.md).
The names below load on first use, so the engine worker (``python -m rotscope.execution.executors.worker``)
starts without importing the planner. ``dry_run`` is imported from its module
(``rotscope.execution.workflows.dry_run``): the package attribute of that name is the module."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rotscope.execution.executors.worker import WorkerBackend
    from rotscope.execution.workflows.dry_run import DryRun, freeze_plan
    from rotscope.execution.workflows.runner import (
        BudgetReached,
        EngineStopped,
        Interrupted,
        resume_experiment,
        run_experiment,
    )

_PUBLIC = {
    "BudgetReached": "workflows.runner",
    "DryRun": "workflows.dry_run",
    "EngineStopped": "workflows.runner",
    "Interrupted": "workflows.runner",
    "WorkerBackend": "executors.worker",
    "freeze_plan": "workflows.dry_run",
    "resume_experiment": "workflows.runner",
    "run_experiment": "workflows.runner",
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
