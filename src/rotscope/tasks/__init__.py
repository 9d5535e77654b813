"""Task families: each module registers a builder of ``Case``s under its name."""

from __future__ import annotations

from collections.abc import Callable

from rotscope.errors import BadInput
from rotscope.types import TaskFamily

TASK_FAMILIES: dict[str, Callable[[], TaskFamily]] = {}


def register_task(name: str) -> Callable[[Callable[[], TaskFamily]], Callable[[], TaskFamily]]:
    def add(factory: Callable[[], TaskFamily]) -> Callable[[], TaskFamily]:
        TASK_FAMILIES[name] = factory
        return factory

    return add


def get_task(name: str) -> TaskFamily:
    from rotscope.tasks import competitive, join, latent, multihop, niah, nolima  # noqa: F401  (registers them)

    factory = TASK_FAMILIES.get(name)
    if factory is None:
        raise BadInput(f"tasks: unknown task family {name!r} (known: {', '.join(sorted(TASK_FAMILIES))})")
    return factory()
