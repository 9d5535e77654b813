"""Haystack variants: several tokenized corpora read from one source in different seeded orders,
so prompts of one length do not all share one filler text.

Variant 0 is the corpus a run with one variant reads (the source's order for the run's seed).
Each further variant reads the source in the order of a seed derived from the run's seed, and is
kept only when its first document is not the first of an earlier variant (compared by text: a
generating source may number its documents alike for every seed), so haystacks differ from their
first document on, at every length. Nothing depends on the grid's lengths, so a length's prompts
stay the same when another length is added. A corpus with fewer documents than asked gives fewer
variants.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.corpus import TokenizedCorpus, tokenize_corpus
from rotscope.types import Tokenizer

ORDERS_PER_VARIANT = 16
"""Seeded orders tried for each variant after the first before giving up on it: with n documents
an order starts at a document not yet taken with chance at least 1/n, so a variant that exists
is missed with chance (1 - 1/n)^16 at most (0.0003 for 3 documents; for many documents nil)."""


def variants_for(asked: int | None, cases: int) -> int:
    """The haystack variants a plan of ``cases`` case indices reads: ``filler.variants``, at most
    one per case; unset (``None``, the default): one per case."""
    return max(1, cases if asked is None else min(asked, cases))


def variant_seed(seed: int, attempt: int) -> int:
    """The source seed of the ``attempt``-th order tried (0: the run's own seed)."""
    if attempt == 0:
        return seed
    return int(hashlib.sha256(f"rotscope-haystack:{seed}:{attempt}".encode()).hexdigest()[:12], 16)


def variant_corpora(
    source: Callable[[int], Iterable[Document]],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    seed: int,
    variants: int,
    allow_repeat: bool,
    origin: str,
) -> list[TokenizedCorpus]:
    """Up to ``variants`` corpora of at least ``min_tokens`` tokens each; ``source(seed)`` gives
    the documents in that seed's order.

    The first is exactly ``tokenize_corpus`` of ``source(seed)``; its errors (an empty or too small
    corpus) are the caller's. Later orders that cannot make a corpus are passed over."""
    corpora: list[TokenizedCorpus] = []
    firsts: set[str] = set()
    attempt = 0
    while len(corpora) < variants and attempt <= (variants - 1) * ORDERS_PER_VARIANT:
        documents: Iterator[Document] = iter(source(variant_seed(seed, attempt)))
        attempt += 1
        first = next(documents, None)
        if corpora and (first is None or first.text in firsts):
            continue
        stream = documents if first is None else _chain(first, documents)
        try:
            corpus = tokenize_corpus(stream, tokenizer, min_tokens, allow_repeat=allow_repeat, origin=origin)
        except BadInput:
            if not corpora:
                raise
            continue
        if first is not None:
            firsts.add(first.text)
        if all(corpus.digest != other.digest for other in corpora):
            corpora.append(corpus)
    return corpora


def _chain(first: Document, rest: Iterator[Document]) -> Iterator[Document]:
    yield first
    yield from rest
