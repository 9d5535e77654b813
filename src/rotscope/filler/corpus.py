"""A filler corpus tokenized once, so every prompt slices token arrays instead of re-encoding text."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.types import Tokenizer

_CHARS_PER_TOKEN_GUESS = 3.0


@dataclass(frozen=True)
class TokenizedCorpus:
    """Token ids of the corpus with each token's byte offset, and the safe insertion points.

    ``line_ends`` holds the token indices where a line of content ends: an evidence line
    ``"\n" + text`` inserted there keeps its neighbours' tokens intact. Index 0 (before all
    filler) is included too.
    """

    ids: np.ndarray
    offsets: np.ndarray
    data: bytes
    line_ends: np.ndarray
    digest: str
    documents: int

    @property
    def size(self) -> int:
        return len(self.ids)

    def prefix_end(self, max_tokens: int) -> int:
        """The largest line end at or below ``max_tokens``: where a haystack of that budget ends."""
        index = int(np.searchsorted(self.line_ends, max_tokens, side="right")) - 1
        return int(self.line_ends[max(index, 0)])

    def nearest_line_ends(self, target: float, end: int) -> list[int]:
        """Line ends in ``[0, end]``, and ``end`` itself (the haystack's last position, where the
        prompt's footer starts a new line), ordered by distance to ``target`` (the best first)."""
        candidates = np.union1d(self.line_ends[self.line_ends <= end], [end])
        order = np.argsort(np.abs(candidates - target), kind="stable")
        return [int(candidates[i]) for i in order]


def normalise_document(text: str) -> str:
    """One document as lines: no leading blank or indented start (a BPE tokenizer would merge it
    with the preceding line break), CRLF as LF, one final newline."""
    return text.replace("\r\n", "\n").lstrip().rstrip("\n") + "\n"


def _line_ends(offsets: np.ndarray, data: bytes) -> np.ndarray:
    """Token indices where a run of line breaks begins right after line content, plus 0 and the end.

    Cutting inside a run of line breaks would let the tokenizer merge the pieces differently.
    """
    view = np.frombuffer(data, dtype=np.uint8)
    starts = offsets[:-1]
    begins_break = view[np.minimum(starts, max(len(view) - 1, 0))] == ord("\n")
    after_content = np.ones(len(starts), dtype=bool)
    after_content[1:] = view[starts[1:] - 1] != ord("\n")
    points = np.flatnonzero(begins_break & after_content)
    return np.unique(np.concatenate(([0], points, [len(starts)]))).astype(np.int64)


def tokenize_corpus(
    source: Iterable[Document],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    allow_repeat: bool,
    origin: str,
    read_tokens: int | None = None,
) -> TokenizedCorpus:
    """Read documents until the corpus holds at least ``read_tokens`` tokens (default
    ``min_tokens``) or the source runs out, then tokenize it once.

    A corpus of fewer than ``min_tokens`` tokens is an error naming both counts, unless
    ``allow_repeat``.
    """
    wanted_tokens = max(min_tokens, read_tokens or 0)
    documents = iter(source)
    texts: list[str] = []
    chars = 0
    wanted_chars = wanted_tokens * _CHARS_PER_TOKEN_GUESS * 1.5
    while True:
        exhausted = True
        for document in documents:
            texts.append(normalise_document(document.text))
            chars += len(texts[-1])
            if chars >= wanted_chars:
                exhausted = False
                break
        if not texts:
            raise BadInput(f"filler: corpus {origin} is empty")
        text = "\n".join(texts)
        ids = tokenizer.encode(text)
        if len(ids) >= wanted_tokens or exhausted:
            break
        wanted_chars *= 2
    if len(ids) < min_tokens:
        if not allow_repeat:
            raise BadInput(
                f"filler: corpus {origin} has {len(ids)} tokens but the longest length needs {min_tokens}; "
                "add text or set filler.allow_repeat: true"
            )
        copies = -(-wanted_tokens // max(len(ids), 1)) + 1
        text = "\n".join([text] * copies)
        ids = tokenizer.encode(text)
    return corpus_of(text, ids, tokenizer, origin=origin, documents=len(texts))


def corpus_of(
    text: str, ids: list[int], tokenizer: Tokenizer, *, origin: str, documents: int
) -> TokenizedCorpus:
    """The corpus of ``text`` already encoded as ``ids``; the ids must round-trip to the text."""
    # One piece() per distinct id, then a lookup per id in C: a million-token corpus has a few
    # thousand distinct ids, and a Python call per token took seconds.
    table = {token_id: tokenizer.piece(token_id) for token_id in set(ids)}
    pieces = list(map(table.__getitem__, ids))
    data = b"".join(pieces)
    if data != text.encode("utf-8"):
        raise BadInput(f"filler: tokenizer {tokenizer.name} does not round-trip the corpus {origin}")
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(piece) for piece in pieces], out=offsets[1:])
    return TokenizedCorpus(
        ids=np.asarray(ids, dtype=np.int64),
        offsets=offsets,
        data=data,
        line_ends=_line_ends(offsets, data),
        digest=hashlib.sha256(data).hexdigest()[:16],
        documents=documents,
    )
