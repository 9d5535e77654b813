"""Task families: each module registers a builder of ``Case``s under its name.

``register_cases`` takes a function that returns the family's cases (the built-in families are
such functions); ``register_task`` takes any factory of a ``TaskFamily`` object;
``register_configured_task`` one that reads the experiment config (a family whose cases come from
a file the config names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rotscope.errors import BadInput
from rotscope.types import Case, TaskFamily

if TYPE_CHECKING:
    from rotscope.config import ExperimentConfig

TASK_FAMILIES: dict[str, Callable[[], TaskFamily]] = {}
CONFIGURED_FAMILIES: dict[str, Callable[[ExperimentConfig], TaskFamily]] = {}
CaseBuilder = Callable[[], list[Case]]


def register_task(name: str) -> Callable[[Callable[[], TaskFamily]], Callable[[], TaskFamily]]:
    def add(factory: Callable[[], TaskFamily]) -> Callable[[], TaskFamily]:
        TASK_FAMILIES[name] = factory
        return factory

    return add


@dataclass(frozen=True)
class BuiltCases:
    """A task family whose cases come from a builder function."""

    name: str
    build: CaseBuilder

    def cases(self) -> Iterable[Case]:
        return self.build()


def register_cases(name: str) -> Callable[[CaseBuilder], CaseBuilder]:
    def add(build: CaseBuilder) -> CaseBuilder:
        TASK_FAMILIES[name] = lambda: BuiltCases(name, build)
        return build

    return add


def register_configured_task(
    name: str,
) -> Callable[[Callable[[ExperimentConfig], TaskFamily]], Callable[[ExperimentConfig], TaskFamily]]:
    def add(factory: Callable[[ExperimentConfig], TaskFamily]) -> Callable[[ExperimentConfig], TaskFamily]:
        CONFIGURED_FAMILIES[name] = factory
        return factory

    return add


def get_task(name: str, config: ExperimentConfig | None = None) -> TaskFamily:
    """The family registered as ``name``; families that read the config need ``config``."""
    from rotscope.tasks import (  # noqa: F401  (registers them)
        cases,
        codebase,
        competitive,
        join,
        latent,
        multihop,
        niah,
        nolima,
        reasoning,
    )

    configured = CONFIGURED_FAMILIES.get(name)
    if configured is not None:
        if config is None:
            raise BadInput(f"tasks: the {name} family is built from the experiment config; none was given")
        return configured(config)
    factory = TASK_FAMILIES.get(name)
    if factory is None:
        known = ", ".join(sorted([*TASK_FAMILIES, *CONFIGURED_FAMILIES]))
        raise BadInput(f"tasks: unknown task family {name!r} (known: {known})")
    return factory()
