"""One registry for every kind of component: task families, filler sources, backends, scorers.

Components are found through one entry-point group per kind (``rotscope.backends``,
``rotscope.tasks``, ``rotscope.fillers``, ``rotscope.scorers``; their options sections through
``rotscope.sections``), and rotscope's built-ins are
listed there exactly as an outside package lists its own (``pyproject.toml``). An entry point's
name is the component's name and its value a module whose import registers it with the kind's
decorator (or ``module:object``, an entry of the kind). The groups are read on first use, and a
module is imported only when its component is asked for, so ``rotscope --help`` pays for none.

A name that two providers claim (two entry points, or a ``register`` from another module than the
one that holds it) is bad input naming both; rotscope's own entry points missing or naming modules
that are gone mean its package metadata is older than its source (``pip install -e .`` again).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Generic, TypeVar, cast

from rotscope.config.spec import section_spec
from rotscope.errors import BadInput

T = TypeVar("T")

OWN = "rotscope"
"""The distribution whose entry points are the built-ins."""
STALE = "rotscope's package metadata is stale: reinstall rotscope (pip install -e .)"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Provider:
    """Where a component came from: the distribution that declares it and the module it is in.
    ``version`` is ``None`` for a module no installed distribution declares (a test, a script)."""

    distribution: str
    version: str | None
    module: str

    @property
    def builtin(self) -> bool:
        return _canonical(self.distribution) == OWN

    def label(self) -> str:
        """``rotscope (rotscope.backends.fake)``: as a duplicate's error names it."""
        return f"{self.distribution} ({self.module})"

    def describe(self) -> str:
        """``rotscope 0.1.0 (built-in)``, ``acme-rotscope 1.0``, or the module for one without a package."""
        if self.version is None:
            return f"module {self.module} (no package)"
        return f"{self.distribution} {self.version}" + (" (built-in)" if self.builtin else "")


def _point_provider(point: importlib.metadata.EntryPoint) -> Provider:
    dist = point.dist
    if dist is None:
        return Provider(point.module.partition(".")[0], None, point.module)
    return Provider(dist.name, dist.version, point.module)


_DISCOVERED: dict[str, list[importlib.metadata.EntryPoint]] | None = None
_REGISTRIES: list[Registry[object]] = []


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of ``group``; every rotscope group is read in one pass over the
    metadata, a distribution found twice on ``sys.path`` counting once (the first, as imports do)."""
    global _DISCOVERED
    if _DISCOVERED is None:
        found: dict[str, list[importlib.metadata.EntryPoint]] = {}
        seen: set[str] = set()
        for dist in importlib.metadata.distributions():
            name = _canonical(dist.name or "")
            if name and name in seen:
                continue
            seen.add(name)
            for point in dist.entry_points:
                if point.group.startswith(f"{OWN}."):
                    found.setdefault(point.group, []).append(point)
        _DISCOVERED = found
    return _DISCOVERED.get(group, [])


def rediscover() -> None:
    """Read the entry points again on next use (after ``sys.path`` changed: tests, a plugin installed
    into a running process). Components already loaded stay registered."""
    global _DISCOVERED, _SECTIONS_LOADED
    _DISCOVERED = None
    _SECTIONS_LOADED = False
    for registry in _REGISTRIES:
        registry._points = None


class Registry(Generic[T]):
    """Components of one ``kind`` by name, discovered through the entry-point ``group``."""

    def __init__(self, kind: str, field: str, group: str, entry_type: type[T] | None = None) -> None:
        self.kind = kind
        self.field = field
        """The experiment file's key that names a component of this kind (in error messages)."""
        self.group = group
        self._entry_type = entry_type
        """What a ``module:object`` entry point may name directly (``None``: any callable)."""
        self._points: dict[str, importlib.metadata.EntryPoint] | None = None
        self._entries: dict[str, T] = {}
        self._modules: dict[str, str] = {}
        """The module each registered name was registered from."""
        self._attributed: dict[str, Provider] = {}
        """Providers known when registered: names registered while their distribution's entry point loaded."""
        self._loading: importlib.metadata.EntryPoint | None = None
        _REGISTRIES.append(cast("Registry[object]", self))

    # --- discovery ---------------------------------------------------------------------------------

    def points(self) -> dict[str, importlib.metadata.EntryPoint]:
        """The group's entry points by name; a name two of them claim, or a group rotscope's own
        metadata lacks, is bad input."""
        if self._points is None:
            points: dict[str, importlib.metadata.EntryPoint] = {}
            for point in _entry_points(self.group):
                held = points.get(point.name)
                if held is not None and (_point_provider(held), held.value) != (
                    _point_provider(point),
                    point.value,
                ):
                    raise BadInput(self._duplicate(point.name, _point_provider(held), _point_provider(point)))
                points[point.name] = point
            if not any(_point_provider(point).builtin for point in points.values()):
                raise BadInput(STALE)
            self._points = points
            for name in list(self._modules):
                self._check_point(name)
        return self._points

    def _check_point(self, name: str) -> None:
        """A name registered by one distribution that another's entry point claims is a duplicate."""
        point = (self._points or {}).get(name)
        if point is None:
            return
        held, registered = _point_provider(point), self.provider(name)
        if _canonical(held.distribution) != _canonical(registered.distribution):
            raise BadInput(self._duplicate(name, held, registered))

    def _duplicate(self, name: str, held: Provider, other: Provider) -> str:
        return f"{self.kind} {name!r} is registered by {held.label()} and by {other.label()}"

    def _load(self, name: str) -> None:
        """Import the module of ``name``'s entry point, unless it is registered already."""
        point = self.points().get(name)
        if point is None or name in self._entries:
            return
        provider = _point_provider(point)
        self._loading = point
        try:
            importlib.import_module(point.module)
        except ModuleNotFoundError as error:
            if error.name is None or not (point.module + ".").startswith(error.name + "."):
                raise  # a module the component itself imports: its own error
            raise self._gone(name, point, provider) from error
        finally:
            self._loading = None
        loaded: object = None
        if point.attr:
            try:
                loaded = point.load()
            except AttributeError as error:
                raise self._gone(name, point, provider) from error
        if name in self._entries:
            return
        if point.attr is not None and self._accepts(loaded):
            self.register(name, module=point.module)(cast(T, loaded))
            return
        if provider.builtin:
            raise BadInput(STALE)
        raise BadInput(
            f"{self.field}: the entry point {name} = {point.value} of {provider.describe()} "
            f"registers no {self.kind} {name!r}"
        )

    def _gone(self, name: str, point: importlib.metadata.EntryPoint, provider: Provider) -> BadInput:
        """An entry point naming a module or object that is not there: metadata older than the code."""
        if provider.builtin:
            return BadInput(STALE)
        return BadInput(
            f"{self.field}: {self.kind} {name!r} of {provider.describe()} names {point.value}, "
            f"which does not import (reinstall {provider.distribution})"
        )

    def _accepts(self, loaded: object) -> bool:
        return isinstance(loaded, self._entry_type) if self._entry_type is not None else callable(loaded)

    def _provider_of(self, module: str) -> Provider:
        """The distribution a registering module belongs to: the one whose entry point names the
        module (or its top package), else none (a test, a script)."""
        top = module.partition(".")[0]
        candidates = list(self.points().values())
        for point in candidates:
            if point.module == module:
                return replace(_point_provider(point), module=module)
        for point in candidates:
            if point.module.partition(".")[0] == top:
                return replace(_point_provider(point), module=module)
        return Provider(top, None, module)

    # --- registration ------------------------------------------------------------------------------

    def register(self, name: str, *, module: str | None = None) -> Callable[[T], T]:
        """A decorator that registers its argument under ``name`` and returns it unchanged.

        ``module`` is the module the component lives in (default: the argument's ``__module__``);
        registering again from the same module (a re-import) replaces, from another is bad input.
        Registering reads no metadata: a name an entry point of another distribution claims is
        found when the entry points are read (or now, when they have been)."""

        def add(entry: T) -> T:
            origin = module or getattr(entry, "__module__", None) or "?"
            held = self._modules.get(name)
            if held is not None and held != origin:
                raise BadInput(self._duplicate(name, self.provider(name), self._provider_of(origin)))
            loading = self._loading
            attributed = None
            if loading is not None and origin.partition(".")[0] == loading.module.partition(".")[0]:
                attributed = replace(_point_provider(loading), module=origin)
            point = (self._points or {}).get(name)
            if point is not None:
                registered = attributed or self._provider_of(origin)
                if _canonical(_point_provider(point).distribution) != _canonical(registered.distribution):
                    raise BadInput(self._duplicate(name, _point_provider(point), registered))
            self._entries[name] = entry
            self._modules[name] = origin
            if attributed is not None:
                self._attributed[name] = attributed
            elif name not in self._attributed or self._attributed[name].module != origin:
                self._attributed.pop(name, None)
            return entry

        return add

    # --- lookup ------------------------------------------------------------------------------------

    def get(self, name: str) -> T:
        """The component registered as ``name``; an unknown name is bad input listing the known."""
        entry = self.find(name)
        if entry is None:
            raise BadInput(f"{self.field}: unknown {self.kind} {name!r} (known: {', '.join(self.names())})")
        return entry

    def find(self, name: str) -> T | None:
        """The component registered as ``name``, or ``None`` (a run made with a family since gone)."""
        self._load(name)
        return self._entries.get(name)

    def names(self) -> list[str]:
        """Every component's name, without importing any."""
        return sorted({*self.points(), *self._entries})

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.points()

    def items(self) -> Iterator[tuple[str, T]]:
        """Every registered component, sorted by name (each one's module is imported)."""
        for name in self.names():
            self._load(name)
        return iter(sorted(self._entries.items()))

    def provider(self, name: str) -> Provider:
        """Where ``name`` comes from, read from its entry point when it is not loaded yet."""
        if name in self._attributed:
            return self._attributed[name]
        if name in self._modules:
            return self._provider_of(self._modules[name])
        point = self.points().get(name)
        if point is None:
            raise BadInput(f"{self.field}: unknown {self.kind} {name!r} (known: {', '.join(self.names())})")
        return _point_provider(point)

    def origins(self) -> dict[str, list[str]]:
        """The names by where they come from (``Provider.describe``), without importing any."""
        grouped: dict[str, list[str]] = {}
        for name in self.names():
            grouped.setdefault(self.provider(name).describe(), []).append(name)
        return grouped


# --- options sections --------------------------------------------------------------------------------

SECTIONS_GROUP = f"{OWN}.sections"
"""The entry-point group of options sections: ``KEY = "module:Class"`` claims the experiment
file's top-level key ``KEY`` for ``Class``, imported on the first config read (not by name)."""


@dataclass(frozen=True)
class Section:
    """A component's own section of the experiment file: a top-level key ``name`` whose mapping
    ``model`` (a pydantic model, its fields marked ``PathOption``/``RuntimeOption``) validates,
    registered from ``module``. ``present``: a built-in's (rotscope's own ``rotscope.sections``
    entry point), part of every config, at its defaults when the file leaves it out (``None`` for a
    class with a required key), as when it was a field of the experiment model; any other section
    is dumped only when given. ``subject``: a subject may override its keys (its class's
    ``rotscope.config.spec.SectionSpec.subject_overrides``)."""

    name: str
    model: type
    module: str
    present: bool = False
    subject: bool = False


_SECTIONS: dict[str, Section] = {}
_FILLER_OPTIONS: dict[str, Section] = {}
_SECTIONS_LOADED = False


def _claim(
    table: dict[str, Section], what: str, name: str, model: type, module: str | None, present: bool = False
) -> type:
    origin = module or getattr(model, "__module__", None) or "?"
    held = table.get(name)
    if held is not None and held.module != origin:
        raise BadInput(
            f"{what} {name!r} is registered by {_module_provider(held.module).label()} "
            f"and by {_module_provider(origin).label()}"
        )
    subject = section_spec(model).subject_overrides
    table[name] = Section(name, model, origin, present=present, subject=subject)
    return model


def register_section(name: str, model: type, *, module: str | None = None) -> type:
    """Claim the experiment file's top-level key ``name`` for ``model`` (returned unchanged).

    Registering again from the same module (a re-import) replaces; from another is bad input
    naming both providers, as for a component's name."""
    return _claim(_SECTIONS, "options section", name, model, module)


def load_sections() -> None:
    """Register the sections of the ``rotscope.sections`` entry points (once): each names its class
    as ``module:Class``; rotscope's own are the built-in, always-present sections. rotscope's
    group missing, or an entry naming what is gone, is stale metadata (or a reinstall to name)."""
    global _SECTIONS_LOADED
    if _SECTIONS_LOADED:
        return
    points = _entry_points(SECTIONS_GROUP)
    if not any(_point_provider(point).builtin for point in points):
        raise BadInput(STALE)
    for point in points:
        provider = _point_provider(point)
        try:
            model = point.load()
        except (ModuleNotFoundError, AttributeError) as error:
            missing = getattr(error, "name", None)
            if isinstance(error, ModuleNotFoundError) and (
                missing is None or not (point.module + ".").startswith(missing + ".")
            ):
                raise  # a module the section's own module imports: its own error
            if provider.builtin:
                raise BadInput(STALE) from error
            raise BadInput(
                f"{SECTIONS_GROUP}: {point.name} of {provider.describe()} names {point.value}, "
                f"which does not import (reinstall {provider.distribution})"
            ) from error
        if not isinstance(model, type) or point.attr is None:
            raise BadInput(f"{SECTIONS_GROUP}: {point.name} = {point.value} names no class (module:Class)")
        _claim(_SECTIONS, "options section", point.name, model, point.module, present=provider.builtin)
    _SECTIONS_LOADED = True


def sections() -> dict[str, Section]:
    """The options sections: those of the ``rotscope.sections`` entry points (``load_sections``) and
    those registered so far, by name (see ``load_outside``)."""
    load_sections()
    return dict(_SECTIONS)


def register_filler_options(kind: str, model: type, *, module: str | None = None) -> type:
    """Type ``filler.options`` for the filler source ``kind``: validated by ``model`` (strictly)
    when the experiment file's ``filler.kind`` is ``kind``; duplicates as for sections."""
    return _claim(_FILLER_OPTIONS, "filler options of", kind, model, module)


def filler_options(kind: str) -> Section | None:
    """The class typing ``filler.options`` of ``kind``, if one is registered."""
    return _FILLER_OPTIONS.get(kind)


def _module_provider(module: str) -> Provider:
    """The distribution whose entry point (any rotscope group) names ``module`` or its top package."""
    points = [point for group in sorted(_all_groups()) for point in _entry_points(group)]
    top = module.partition(".")[0]
    for exact in (True, False):
        for point in points:
            if point.module == module if exact else point.module.partition(".")[0] == top:
                return replace(_point_provider(point), module=module)
    return Provider(top, None, module)


def _all_groups() -> set[str]:
    _entry_points("")
    return set(_DISCOVERED or {})


def load_outside() -> None:
    """Import the module of every entry point that is not rotscope's own (in every rotscope group),
    so that the options sections outside components register are known: the experiment file's
    reader calls it only for a top-level key that no section claims yet. A module that is gone is
    bad input naming the entry point."""
    load_sections()
    for group in sorted(_all_groups()):
        for point in _entry_points(group):
            provider = _point_provider(point)
            if provider.builtin:
                continue
            try:
                importlib.import_module(point.module)
            except ModuleNotFoundError as error:
                if error.name is None or not (point.module + ".").startswith(error.name + "."):
                    raise
                raise BadInput(
                    f"{group}: {point.name} of {provider.describe()} names {point.value}, "
                    f"which does not import (reinstall {provider.distribution})"
                ) from error
