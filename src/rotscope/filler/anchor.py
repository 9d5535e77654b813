"""A corpus arranged around one document whose lines serve as evidence already in the filler.

Other documents come before and after it, enough for a prompt window of the longest length to
put any line of it at any depth; the layout then picks where the window starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import cycle

import numpy as np

from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.corpus import TokenizedCorpus, corpus_of, normalise_document
from rotscope.types import Tokenizer


@dataclass(frozen=True)
class AnchoredCorpus:
    """``corpus`` holds the document named ``name`` at bytes ``[document_start, document_end)``;
    ``starts`` are the token indices where a window may begin."""

    name: str
    corpus: TokenizedCorpus
    document_start: int
    document_end: int
    starts: np.ndarray

    def line_tokens(self, line: str) -> tuple[int, int]:
        """Token range ``[start, end)`` covering the one line of the document whose stripped text is
        ``line``; the tokens at either edge may carry white space of the neighbouring lines."""
        data = self.corpus.data
        document = data[self.document_start : self.document_end].decode("utf-8")
        found = [index for index, text in enumerate(document.split("\n")) if text.strip() == line]
        if len(found) != 1:
            raise BadInput(f"filler: {self.name} has {len(found)} lines reading {line!r}, not exactly one")
        lines = document.split("\n")
        before = "\n".join(lines[: found[0]]) + ("\n" if found[0] else "")
        indent = len(lines[found[0]]) - len(lines[found[0]].lstrip())
        first = (
            self.document_start + len(before.encode("utf-8")) + len(lines[found[0]][:indent].encode("utf-8"))
        )
        last = first + len(line.encode("utf-8"))
        offsets = self.corpus.offsets
        start = int(np.searchsorted(offsets, first, side="right")) - 1
        end = int(np.searchsorted(offsets, last, side="left"))
        return start, end


def _window_starts(corpus: TokenizedCorpus) -> np.ndarray:
    """Token indices where a window may begin: the token holding the first visible byte of each
    line (most code lines are indented; the window then starts without the indentation)."""
    data, offsets = corpus.data, corpus.offsets
    firsts: list[int] = []
    position = 0
    for line in data.split(b"\n"):
        stripped = line.lstrip()
        if stripped:
            firsts.append(position + len(line) - len(stripped))
        position += len(line) + 1
    return np.unique(np.searchsorted(offsets, np.asarray(firsts, dtype=np.int64), side="right") - 1)


def _take(documents: Iterator[Document], tokens: int, tokenizer: Tokenizer) -> list[str]:
    texts: list[str] = []
    counted = 0
    for document in documents:
        texts.append(normalise_document(document.text))
        counted += tokenizer.count(texts[-1])
        if counted >= tokens:
            return texts
    return texts


def anchor_document(
    document: Document,
    others: Sequence[Document],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    allow_repeat: bool,
    origin: str,
) -> AnchoredCorpus:
    """``document`` with at least ``min_tokens`` tokens of ``others`` before it and after it,
    taken in their order (again from the first when ``allow_repeat`` and they run out)."""
    stream = iter(cycle(others) if allow_repeat and others else others)
    before = _take(stream, min_tokens, tokenizer)
    after = _take(stream, min_tokens, tokenizer)
    return anchor_between(document, before, after, tokenizer, min_tokens, origin=origin)


def anchor_between(
    document: Document,
    before: Sequence[str],
    after: Sequence[str],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    origin: str,
) -> AnchoredCorpus:
    """``document`` between the normalised texts ``before`` and ``after``, each of which must hold
    at least ``min_tokens`` tokens (the error says to add files or allow repeats)."""
    sides = (sum(tokenizer.count(text) for text in side) for side in (before, after))
    if min(sides) < min_tokens:
        raise BadInput(
            f"filler: corpus {origin} has too little text besides {document.name} to put its evidence at "
            f"every depth of a {min_tokens}-token prompt; add files or set filler.allow_repeat: true"
        )
    head = "".join(text + "\n" for text in before)
    body = normalise_document(document.text)
    text = head + body + "".join("\n" + text for text in after)
    corpus = corpus_of(
        text, tokenizer.encode(text), tokenizer, origin=origin, documents=len(before) + len(after) + 1
    )
    start = len(head.encode("utf-8"))
    return AnchoredCorpus(
        name=document.name,
        corpus=corpus,
        document_start=start,
        document_end=start + len(body.encode("utf-8")),
        starts=_window_starts(corpus),
    )
