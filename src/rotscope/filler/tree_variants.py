"""Haystack variants of a code tree read in its own order (``filler.order: tree`` with
``filler.variants: N``): variant ``k`` is the tree rotated by ``k`` files.

A tree read in its sorted order is the same text for every seed, so seeded variants
(``filler.variants``) cannot make a second one. Rotations do: variant ``k`` reads the files that
hold no evidence from the ``k``-th on, wrapping round to the first, and sets each file that holds
evidence ``k`` files further along that ring than its own place in the tree, so the code before and
after its lines comes from other files in every variant. Variant 0 is the haystack of a run
without variants. The files keep their tree order within each variant; a tree of ``n`` files
besides the evidence's gives at most ``n`` variants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rotscope.config.experiment import FillerConfig
from rotscope.errors import BadInput
from rotscope.filler import Document
from rotscope.filler.anchor import AnchoredCorpus, anchor_between, anchor_document
from rotscope.filler.code import KIND as CODE_KIND
from rotscope.filler.corpus import TokenizedCorpus, normalise_document, tokenize_corpus
from rotscope.types import Tokenizer


def tree_variant_count(config: FillerConfig) -> int:
    """How many rotations of the tree a run reads: ``filler.variants`` where a code filler is read
    in tree order, else 1 (seeded variants are ``filler.variants``' own business)."""
    if config.kind != CODE_KIND or config.order != "tree":
        return 1
    return config.variants or 1


def rotated(files: Sequence[Document], k: int) -> list[Document]:
    """``files`` from the ``k``-th on, then the first ``k``."""
    return [*files[k:], *files[:k]]


def _check_count(others: Sequence[Document], variants: int, origin: str) -> None:
    if variants > len(others):
        raise BadInput(
            f"filler.variants: {variants} rotations of the tree asked, but {origin} has {len(others)} files "
            "besides those that hold evidence; ask for at most that many"
        )


def tree_corpora(
    others: Sequence[Document],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    variants: int,
    allow_repeat: bool,
    origin: str,
) -> list[TokenizedCorpus]:
    """The plain haystack of each rotation (what a prompt without evidence in the tree reads: an
    evidence-absent control), each at least ``min_tokens`` tokens."""
    _check_count(others, variants, origin)
    return [
        tokenize_corpus(rotated(others, k), tokenizer, min_tokens, allow_repeat=allow_repeat, origin=origin)
        for k in range(variants)
    ]


def _sides(
    ring: Sequence[Document], gap: int, tokenizer: Tokenizer, min_tokens: int, allow_repeat: bool
) -> tuple[list[str], list[str]]:
    """The texts before the gap (read backwards from the file before it) and after it (from the file
    at it on), each until it holds ``min_tokens`` tokens; without ``allow_repeat`` no file is on
    both sides."""
    texts = [normalise_document(document.text) for document in ring]
    counts = [tokenizer.count(text) for text in texts]
    n = len(ring)
    limit = n if not allow_repeat or not any(counts) else None
    before: list[str] = []
    counted = taken = 0
    while counted < min_tokens and (limit is None or taken < limit):
        index = (gap - 1 - taken) % n
        before.insert(0, texts[index])
        counted += counts[index]
        taken += 1
    after: list[str] = []
    counted = 0
    step = 0
    while counted < min_tokens and (limit is None or taken + step < limit):
        index = (gap + step) % n
        after.append(texts[index])
        counted += counts[index]
        step += 1
    return before, after


def tree_anchors(
    found: Mapping[str, Document],
    sources: set[str],
    tokenizer: Tokenizer,
    min_tokens: int,
    *,
    variants: int,
    allow_repeat: bool,
    origin: str,
) -> list[dict[str, AnchoredCorpus]]:
    """For each rotation, each evidence file (``sources``) arranged among the others: in variant 0
    as a run without variants arranges it (``anchor_document``), in variant ``k`` set ``k`` files
    further along the ring of the others than its own place in the tree. ``found`` holds the tree's
    documents in tree order."""
    others = [document for name, document in found.items() if name not in sources]
    _check_count(others, variants, origin)
    names = list(found)
    arranged: list[dict[str, AnchoredCorpus]] = []
    for k in range(variants):
        anchors: dict[str, AnchoredCorpus] = {}
        for name in sorted(sources):
            if k == 0:
                anchors[name] = anchor_document(
                    found[name], others, tokenizer, min_tokens, allow_repeat=allow_repeat, origin=origin
                )
                continue
            place = sum(1 for other in names[: names.index(name)] if other not in sources)
            before, after = _sides(others, (place + k) % len(others), tokenizer, min_tokens, allow_repeat)
            anchors[name] = anchor_between(found[name], before, after, tokenizer, min_tokens, origin=origin)
        arranged.append(anchors)
    return arranged
