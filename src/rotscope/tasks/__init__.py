"""Task families: each module registers a builder of ``Case``s under its name.

``register_cases`` takes a function that returns the family's cases (the built-in families are
such functions); ``register_task`` takes any factory of a ``TaskFamily`` object;
``register_configured_cases`` takes a function of the experiment config (cases written in it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rotscope.config import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.types import Case, TaskFamily

TASK_FAMILIES: dict[str, Callable[[], TaskFamily]] = {}
CONFIGURED_FAMILIES: dict[str, Callable[[ExperimentConfig], list[Case]]] = {}
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


def register_configured_cases(
    name: str,
) -> Callable[[Callable[[ExperimentConfig], list[Case]]], Callable[[ExperimentConfig], list[Case]]]:
    def add(build: Callable[[ExperimentConfig], list[Case]]) -> Callable[[ExperimentConfig], list[Case]]:
        CONFIGURED_FAMILIES[name] = build
        return build

    return add


def get_task(name: str, config: ExperimentConfig | None = None) -> TaskFamily:
    """The family registered as ``name``; families whose cases live in the experiment file need
    its ``config``."""
    from rotscope.tasks import codebase, competitive, join, latent, multihop, niah, nolima, reasoning  # noqa: F401

    configured = CONFIGURED_FAMILIES.get(name)
    if configured is not None:
        if config is None:
            raise BadInput(f"tasks: family {name!r} takes its cases from an experiment file")
        return BuiltCases(name, lambda: configured(config))
    factory = TASK_FAMILIES.get(name)
    if factory is None:
        known = ", ".join(sorted([*TASK_FAMILIES, *CONFIGURED_FAMILIES]))
        raise BadInput(f"tasks: unknown task family {name!r} (known: {known})")
    return factory()
