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


FillerSource = Callable[[FillerConfig, int], Iterator[Document]]
"""Yields the documents of a corpus in a deterministic order for the given seed."""

FILLER_SOURCES: dict[str, FillerSource] = {}


def register_filler(kind: str) -> Callable[[FillerSource], FillerSource]:
    def add(source: FillerSource) -> FillerSource:
        FILLER_SOURCES[kind] = source
        return source

    return add


def documents(config: FillerConfig, seed: int) -> Iterator[Document]:
    from rotscope.filler import code, text  # noqa: F401  (registers the built-in sources)

    return FILLER_SOURCES[config.kind](config, seed)
