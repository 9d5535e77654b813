"""Task families: each module registers a builder of ``Case``s under its name.

``register_cases`` takes a function that returns the family's cases (the built-in families are
such functions); ``register_task`` takes any factory of a ``TaskFamily`` object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rotscope.errors import BadInput
from rotscope.types import Case, TaskFamily

TASK_FAMILIES: dict[str, Callable[[], TaskFamily]] = {}
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


def get_task(name: str) -> TaskFamily:
    from rotscope.tasks import (  # noqa: F401  (registers them)
        competitive,
        join,
        latent,
        multihop,
        niah,
        nolima,
        reasoning,
    )

    factory = TASK_FAMILIES.get(name)
    if factory is None:
        raise BadInput(f"tasks: unknown task family {name!r} (known: {', '.join(sorted(TASK_FAMILIES))})")
    return factory()
