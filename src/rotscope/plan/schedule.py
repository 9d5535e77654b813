"""Work-item order, and the prefill work a set of prompts needs.

A local engine keeps the KV cache of the previous prompt, so prompts that share a prefix should
run one after the other: lexicographic order of token ids is a depth-first walk of their token
trie. Remote APIs run in one of three orders (``order:`` in the config):

- ``interleaved``: a seeded shuffle of all calls, so provider drift over time is spread over cells
  call by call; a provider's prompt cache is hit only by chance.
- ``grouped``: the trie cut into prefix groups (subtrees below the prefix all prompts share), the
  groups in seeded random order, each group's calls together in trie order. A provider's cache
  warms once per group; drift is spread over groups, and the cells of one group run back to back.
- ``prefix``: the full trie order, as a local engine runs; drift then follows the trie (and with
  it length and depth), so it is for servers without drift, such as a local llama.cpp server.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import groupby, pairwise

from rotscope._util.tokens import common_prefix

GROUP_SLACK = 0.1
"""``grouped`` cuts the trie into as many groups as keep the prefill of any group order within
this share above the lower bound on a cache that holds the last prompt only (see
``prefix_groups``)."""


def prefix_order(token_ids: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``token_ids`` in trie (lexicographic) order."""
    return sorted(range(len(token_ids)), key=lambda i: tuple(token_ids[i]))


def shuffled_order(count: int, seed: int) -> list[int]:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


def prefix_groups(token_ids: Sequence[Sequence[int]], slack: float = GROUP_SLACK) -> list[list[int]]:
    """The prompts cut into prefix groups: runs of the trie order, each one subtree of the trie.

    In trie order, prompt ``i`` shares ``l_i`` tokens with the one before it and a cache holding
    the last prompt evaluates exactly the lower bound. Cutting before prompt ``i`` puts a random
    group before it, which shares at least the stem (the prefix of all prompts), so the cut costs
    at most ``l_i - stem`` tokens more, whatever order the groups run in. The cuts are made at the
    shallowest branch points first (cheapest, and cutting all of one depth at once keeps every
    group a subtree), as long as their total stays within ``slack`` times the lower bound: so the
    grouped order evaluates at most ``(1 + slack)`` times the lower bound on such a cache, with
    as many groups as that allows."""
    order = prefix_order(token_ids)
    if not order:
        return []
    shared = [common_prefix(token_ids[a], token_ids[b]) for a, b in pairwise(order)]
    budget = slack * prefill_bounds(token_ids)[1]
    stem = min(shared, default=0)
    cuts: set[int] = set()
    spent = 0
    by_depth = sorted(range(len(shared)), key=shared.__getitem__)
    for depth, positions in groupby(by_depth, key=shared.__getitem__):
        at = list(positions)
        cost = len(at) * (depth - stem)
        if spent + cost > budget:
            break
        spent += cost
        cuts.update(at)
    groups = [[order[0]]]
    for position, index in enumerate(order[1:]):
        if position in cuts:
            groups.append([index])
        else:
            groups[-1].append(index)
    return groups


def grouped_order(groups: Sequence[Sequence[int]], seed: int) -> list[int]:
    """The groups in seeded random order, each group's members together in their own order."""
    return [index for group in (groups[i] for i in shuffled_order(len(groups), seed)) for index in group]


def group_prefix(token_ids: Sequence[Sequence[int]], group: Sequence[int]) -> int:
    """Tokens every member of ``group`` shares (a single prompt shares all of its own)."""
    first = token_ids[group[0]]
    return min((common_prefix(first, token_ids[i]) for i in group[1:]), default=len(first))


def cache_evaluated(token_ids: Sequence[Sequence[int]], order: Sequence[int]) -> int:
    """Prompt tokens a cache holding only the last prompt evaluates when prompts run in ``order``
    (what llama.cpp's server does with one slot)."""
    previous: Sequence[int] = ()
    total = 0
    for index in order:
        total += len(token_ids[index]) - common_prefix(previous, token_ids[index])
        previous = token_ids[index]
    return total


def expected_prefill(token_ids: Sequence[Sequence[int]], *, reuse: bool) -> list[int]:
    """Prompt tokens each prompt should need evaluated when they run in the given order, one at a
    time, on an engine that keeps the previous prompt's KV cache (``reuse``; else all of them): what
    it does not share with the previous prompt, and at least its last token, which the engine
    evaluates again to read the next one."""
    evaluated: list[int] = []
    previous: Sequence[int] = ()
    for ids in token_ids:
        shared = common_prefix(previous, ids[:-1]) if reuse else 0
        evaluated.append(len(ids) - shared)
        previous = ids
    return evaluated


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


def trie_runs(token_ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices of ``token_ids`` in trie order, cut into runs whose neighbours share at least half of
    the shorter prompt. For a paired session of two local engines, each with its own KV cache:
    both keep trie order whatever goes between their runs, so runs much finer than the prefix
    groups of a shared remote cache (``prefix_groups``) cost no reuse and spread drift better."""
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


def subject_rounds(counts: Sequence[int], seed: int) -> list[tuple[int, int]]:
    """One seeded interleaving of N subjects' groups, as (subject, group index): round r holds
    group r of every subject that has one, in an order a seeded shuffle decides, so every stretch of
    time holds all subjects (drift over time falls on all alike) and none always goes first. Groups
    one subject has more of follow, in order. A session's --models; ``paired_rounds`` stays the
    stored order of --pair sessions."""
    rng = random.Random(f"models:{seed}")
    order: list[tuple[int, int]] = []
    for number in range(max(counts, default=0)):
        present = [subject for subject, count in enumerate(counts) if number < count]
        rng.shuffle(present)
        order.extend((subject, number) for subject in present)
    return order
