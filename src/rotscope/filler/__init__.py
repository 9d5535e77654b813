"""Filler sources: where haystack text comes from. A source yields documents in a seeded order;
``corpus.TokenizedCorpus`` tokenizes them once so prompts slice token arrays."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rotscope.config import FillerConfig


@dataclass(frozen=True)
class Document:
    name: str
    text: str


FillerSource = Callable[[FillerConfig, int, frozenset[str]], Iterator[Document]]
"""Yields the documents of a corpus in a deterministic order for the given seed. The strings in
the third argument are guarded by the experiment: a source that generates text avoids them (the
verifier rejects any prompt whose filler still contains one)."""

FILLER_SOURCES: dict[str, FillerSource] = {}


def register_filler(kind: str) -> Callable[[FillerSource], FillerSource]:
    def add(source: FillerSource) -> FillerSource:
        FILLER_SOURCES[kind] = source
        return source

    return add


def documents(config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Document]:
    from rotscope.filler import code, readinglog, text  # noqa: F401  (registers the built-in sources)

    return FILLER_SOURCES[config.kind](config, seed, avoid)
