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


def prefix_groups(token_ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices of ``token_ids`` in trie order, cut into runs whose neighbours share at least half of
    the shorter prompt: within a run a local engine reuses most of its KV cache, between runs little
    is lost, so another subject's calls can go between runs."""
    groups: list[list[int]] = []
    previous: Sequence[int] = ()
    for index in prefix_order(token_ids):
        ids = token_ids[index]
        shared = common_prefix(previous, ids)
        if groups and 2 * shared >= min(len(previous), len(ids)) > 0:
            groups[-1].append(index)
        else:
            groups.append([index])
        previous = ids
    return groups


def paired_rounds(counts: tuple[int, int], seed: int) -> list[tuple[int, int]]:
    """One seeded interleaving of two subjects' groups, as (subject, group index): round r holds
    group r of each subject, in an order a seeded coin decides, so every stretch of time holds both
    subjects (drift over time falls on both alike) and neither always goes first. Groups one
    subject has more of follow, in order."""
    rng = random.Random(f"pair:{seed}")
    order: list[tuple[int, int]] = []
    for number in range(max(counts)):
        present = [subject for subject in (0, 1) if number < counts[subject]]
        if len(present) == 2 and rng.random() < 0.5:
            present.reverse()
        order.extend((subject, number) for subject in present)
    return order
