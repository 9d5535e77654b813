"""One registry for every kind of component: task families, filler sources, backends, scorers.

A component registers under a name with the registry's decorator; the built-in ones do exactly
what an outside package does. Each registry names the modules that hold its built-ins and imports
them on first use, so ``rotscope --help`` pays for none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from rotscope.errors import BadInput

T = TypeVar("T")


class Registry(Generic[T]):
    """Components of one ``kind`` by name."""

    def __init__(self, kind: str, field: str, builtins: Sequence[str] = ()) -> None:
        self.kind = kind
        self.field = field
        """The experiment file's key that names a component of this kind (in error messages)."""
        self._builtins = tuple(builtins)
        self._loaded = False
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator that registers its argument under ``name`` and returns it unchanged."""

        def add(entry: T) -> T:
            self._entries[name] = entry
            return entry

        return add

    def _load_builtins(self) -> None:
        if not self._loaded:
            self._loaded = True
            for module in self._builtins:
                importlib.import_module(module)

    def get(self, name: str) -> T:
        """The component registered as ``name``; an unknown name is bad input listing the known."""
        self._load_builtins()
        entry = self._entries.get(name)
        if entry is None:
            raise BadInput(f"{self.field}: unknown {self.kind} {name!r} (known: {', '.join(self.names())})")
        return entry

    def find(self, name: str) -> T | None:
        """The component registered as ``name``, or ``None`` (a run made with a family since gone)."""
        self._load_builtins()
        return self._entries.get(name)

    def names(self) -> list[str]:
        self._load_builtins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_builtins()
        return name in self._entries

    def items(self) -> Iterator[tuple[str, T]]:
        """Every registered component, sorted by name."""
        self._load_builtins()
        return iter(sorted(self._entries.items()))
