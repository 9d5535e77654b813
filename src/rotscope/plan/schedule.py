"""Work-item order, and the prefill work a set of prompts needs.

A local engine keeps the KV cache of the previous prompt, so prompts that share a prefix should
run one after the other: lexicographic order of token ids is a depth-first walk of their token
trie. Remote APIs get a seeded shuffle instead, so provider drift over time is spread over cells.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rotscope._util.tokens import common_prefix


def prefix_order(token_ids: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``token_ids`` in trie (lexicographic) order."""
    return sorted(range(len(token_ids)), key=lambda i: tuple(token_ids[i]))


def shuffled_order(count: int, seed: int) -> list[int]:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


def prefill_bounds(token_ids: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(naive, lower bound): the sum of prompt tokens, and the number of distinct prefixes
    (nodes of the token trie), which is the least any cache can evaluate."""
    naive = sum(len(ids) for ids in token_ids)
    distinct = {tuple(ids) for ids in token_ids}
    ordered = sorted(distinct)
    lower = 0
    previous: tuple[int, ...] = ()
    for ids in ordered:
        lower += len(ids) - common_prefix(previous, ids)
        previous = ids
    return naive, lower
