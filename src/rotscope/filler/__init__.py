"""Filler sources: where haystack text comes from. A source yields documents in a seeded order;
``corpus.TokenizedCorpus`` tokenizes them once so prompts slice token arrays."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rotscope.config.experiment import FillerConfig
from rotscope.registry import Registry, register_filler_options

__all__ = [
    "ENCODING_HINT",
    "FILLER_SOURCES",
    "Document",
    "FillerEntry",
    "FillerSource",
    "describe_filler",
    "documents",
    "register_filler",
]


ENCODING_HINT = " (set filler.encoding to the encoding the files are written in)"
"""Said after an invalid byte in a filler file: the one setting that changes how it is read."""


@dataclass(frozen=True)
class Document:
    name: str
    text: str


FillerSource = Callable[[FillerConfig, int, frozenset[str]], Iterator[Document]]
"""Yields the documents of a corpus in a deterministic order for the given seed. The strings in
the third argument are guarded by the experiment: a source that generates text avoids them (the
verifier rejects any prompt whose filler still contains one)."""


@dataclass(frozen=True)
class FillerEntry:
    """A registered filler source and how a run names the corpus it makes from a config."""

    documents: FillerSource
    describe: Callable[[FillerConfig], str]


FILLER_SOURCES: Registry[FillerEntry] = Registry(
    "filler source", "filler.kind", "rotscope.fillers", FillerEntry
)
"""Found through the ``rotscope.fillers`` entry points, the built-ins' as an outside package's."""


def register_filler(
    kind: str,
    *,
    describe: Callable[[FillerConfig], str] | None = None,
    options: type | None = None,
) -> Callable[[FillerSource], FillerSource]:
    """Register a source for ``filler: {kind: KIND}``; ``describe`` names its corpus (default: the
    kind). ``options``: a pydantic class typing ``filler.options`` for this kind
    (``rotscope.registry.register_filler_options``): the experiment file's mapping is validated by
    it (its ``PathOption`` fields resolved), and the source reads
    ``options.model_validate(config.options)``."""

    def add(source: FillerSource) -> FillerSource:
        if options is not None:
            register_filler_options(kind, options, module=source.__module__)
        FILLER_SOURCES.register(kind, module=source.__module__)(
            FillerEntry(source, describe or (lambda config: kind))
        )
        return source

    return add


def describe_filler(config: FillerConfig) -> str:
    """The corpus a filler config names, as runs record it (``code:json``, ``text:docs/*.md``)."""
    return FILLER_SOURCES.get(config.kind).describe(config)


def documents(config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Document]:
    return FILLER_SOURCES.get(config.kind).documents(config, seed, avoid)
