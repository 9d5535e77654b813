"""Task families: each module registers its family under a name.

``register_cases`` takes a function that returns the family's cases (the built-in families are
such functions); ``register_task`` takes a factory of a ``TaskFamily`` from the experiment config
(a family whose cases come from a file the config names, or that plans its own prompts). A family
may bring its own analysis and the order of its named layouts; the planner and the summary ask the
registry for them instead of branching on a family's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rotscope.registry import Registry, register_section
from rotscope.rows import Row
from rotscope.types import Case, TaskFamily

if TYPE_CHECKING:
    from rotscope.config.experiment import ExperimentConfig

__all__ = [
    "DEFAULT_CASES",
    "NO_HOOKS",
    "TASKS",
    "BuiltCases",
    "FamilyHooks",
    "TaskEntry",
    "get_task",
    "register_cases",
    "register_counted_cases",
    "register_task",
]

DEFAULT_CASES = 16
"""How many cases a built-in family makes unless ``cases_per_task`` asks for another number."""

CaseBuilder = Callable[[], list[Case]]
CountedBuilder = Callable[[int], list[Case]]
TaskFactory = Callable[["ExperimentConfig"], TaskFamily]
Analysis = Callable[[list[Row]], dict[str, Any]]


@dataclass(frozen=True)
class FamilyHooks:
    """What a family may add to the planner and the summary, registered with it in one piece.

    ``analyse`` replaces the depth-pooled position effect of a family whose layouts are not depths
    (its result is merged into the task's summary); ``layout_order`` orders its named layouts in
    tables and figures; ``region``: the family's depth names a region its evidence is spread over
    (``spread`` pieces), and its cells carry the ``region`` its pieces reached; ``control_kind``:
    what its evidence-absent control measures, written into the summary's ``controls`` so the
    views word it without knowing the family (``abstention``: the right reply is "not in the
    context"; ``compliance``: the base rate of following an instruction the prompt lacks);
    ``own_lengths``: its prompts keep a length of their own (recordings), so the grid's ``lengths``
    do not apply to it and the plan's lines say so."""

    analyse: Analysis | None = None
    layout_order: tuple[str, ...] = ()
    region: bool = False
    control_kind: str = "abstention"
    own_lengths: bool = False


NO_HOOKS = FamilyHooks()


@dataclass(frozen=True)
class TaskEntry:
    """A registered family: how to build it, and its optional hooks (``FamilyHooks``)."""

    factory: TaskFactory
    hooks: FamilyHooks = NO_HOOKS
    most_cases: Callable[[], int] | None = None
    """The most cases a family that makes as many as asked (``cases_per_task``) can make; ``None``
    for a family whose cases do not follow ``cases_per_task`` beyond a bound of its own (a case
    file, a codebase) or that has no such bound below what anyone asks."""


TASKS: Registry[TaskEntry] = Registry("task family", "tasks", "rotscope.tasks", TaskEntry)
"""Found through the ``rotscope.tasks`` entry points, the built-ins' as an outside package's."""


def register_task(
    name: str,
    *,
    hooks: FamilyHooks = NO_HOOKS,
    most_cases: Callable[[], int] | None = None,
    module: str | None = None,
    options: tuple[str, type] | None = None,
) -> Callable[[TaskFactory], TaskFactory]:
    """Register a factory that builds the family from the experiment config (``module``: where
    the family lives, default the factory's own module); ``options``: ``(key, class)`` of the
    family's own section of the experiment file (``rotscope.registry.register_section``), read in
    the factory as ``config.section(class)``; ``hooks``: what the family adds to the planner and
    the summary (``FamilyHooks``)."""

    def add(factory: TaskFactory) -> TaskFactory:
        if options is not None:
            register_section(*options, module=module or factory.__module__)
        entry = TaskEntry(factory, hooks, most_cases)
        TASKS.register(name, module=module or factory.__module__)(entry)
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
    """Register a function that returns the family's cases (the config is not needed)."""

    def add(build: CaseBuilder) -> CaseBuilder:
        register_task(name, module=build.__module__)(lambda config: BuiltCases(name, build))
        return build

    return add


def register_counted_cases(
    name: str, most: int | Callable[[], int] | None = None, *, hooks: FamilyHooks = NO_HOOKS
) -> Callable[[CountedBuilder], CountedBuilder]:
    """Register a function that returns as many cases as it is asked for (the experiment's
    ``cases_per_task``), up to ``most`` (a number, or a function that counts them; ``None``: no
    bound a search need know), or raises ``BadInput`` naming the most it can make."""
    most_cases = most if callable(most) or most is None else lambda: most

    def add(build: CountedBuilder) -> CountedBuilder:
        factory = register_task(name, hooks=hooks, most_cases=most_cases, module=build.__module__)
        factory(lambda config: BuiltCases(name, lambda: build(config.cases_per_task)))
        return build

    return add


def get_task(name: str, config: ExperimentConfig | None = None) -> TaskFamily:
    """The family registered as ``name``, built for ``config`` (default: the default experiment)."""
    from rotscope.config.experiment import ExperimentConfig

    return TASKS.get(name).factory(config or ExperimentConfig())
