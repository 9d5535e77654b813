"""The order a run's calls go in, and the prefix group each remote call belongs to.

A local engine runs in prefix-trie order. A remote run takes the config's ``order`` (see
``rotscope.plan.schedule``); every remote call is told its prefix group and the prefixes it shares
with its neighbours in the group, whatever the order, so a provider's prompt cache can be pointed
at them (``PrefixGroup``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from rotscope.plan.schedule import group_prefix, grouped_order, prefix_groups, prefix_order, shuffled_order
from rotscope.types import PrefixGroup, WorkItem


@dataclass(frozen=True)
class ExecutionOrder:
    """The ordered items and how the order was made, as the run's metadata says it."""

    items: list[WorkItem]
    kind: str
    """``prefix`` (local engines always), ``interleaved``, ``grouped``."""
    groups: int
    largest_group: int
    seed: int | None

    def describe(self) -> str:
        """The ``order`` of the run's metadata (``execution.order`` of the summary)."""
        if self.kind == "prefix":
            return "prefix trie" if self.seed is None else "prefix: the full trie order"
        if self.kind == "interleaved":
            return f"interleaved: seeded shuffle of all calls (seed {self.seed})"
        return (
            f"grouped: {self.groups} prefix groups in seeded order (seed {self.seed}), "
            f"each group's calls together, the largest {self.largest_group} calls"
        )


def execution_order(
    items: Sequence[WorkItem], local: bool, seed: int, order: str = "interleaved"
) -> ExecutionOrder:
    """Prefix-trie order for local engines; ``order`` for remote APIs, each item told its group."""
    token_ids = [item.prompt.token_ids for item in items]
    if local:
        return ExecutionOrder([items[i] for i in prefix_order(token_ids)], "prefix", 0, 0, None)
    groups = prefix_groups(token_ids)
    everything = list(range(len(items)))
    stem_tokens, stem_chars = shared_prefix(items, token_ids, everything) if items else (0, 0)
    hinted = list(items)
    for group in groups:
        shared_tokens = group_prefix(token_ids, group)
        digest = hashlib.sha256(repr(token_ids[group[0]][:shared_tokens]).encode()).hexdigest()[:16]
        hint = PrefixGroup(f"rotscope-{digest}", len(group), shared_tokens, stem_tokens, stem_chars)
        neighbours = [shared_prefix(items, token_ids, pair) for pair in pairwise(group)]
        for position, index in enumerate(group):
            previous = neighbours[position - 1] if position > 0 else (0, 0)
            following = neighbours[position] if position < len(neighbours) else (0, 0)
            call_hint = replace(
                hint,
                previous_tokens=previous[0],
                previous_chars=previous[1],
                next_tokens=following[0],
                next_chars=following[1],
            )
            hinted[index] = replace(items[index], prefix_group=call_hint)
    if order == "prefix":
        indices = prefix_order(token_ids)
    elif order == "grouped":
        indices = grouped_order(groups, seed)
    else:
        indices = shuffled_order(len(items), seed)
    largest = max((len(group) for group in groups), default=0)
    return ExecutionOrder([hinted[i] for i in indices], order, len(groups), largest, seed)


def shared_prefix(
    items: Sequence[WorkItem], token_ids: Sequence[Sequence[int]], members: Sequence[int]
) -> tuple[int, int]:
    """(tokens, characters of the last message's content) that every one of ``members`` shares,
    the characters cut back to a word boundary (``word_boundary``); no characters when the messages
    before the last one differ."""
    shared_tokens = group_prefix(token_ids, members)
    messages = [items[i].prompt.messages for i in members]
    first = messages[0]
    if not first or any(len(m) != len(first) or m[:-1] != first[:-1] for m in messages):
        return shared_tokens, 0
    contents = [m[-1]["content"] for m in messages]
    common = _common_text(contents)
    if all(len(content) == len(common) for content in contents):  # the same text: all of it
        return shared_tokens, len(common)
    return shared_tokens, word_boundary(common)


def word_boundary(text: str) -> int:
    """Where the last run of whitespace after a word starts in ``text`` (0 if none): a cache
    breakpoint cut there splits the text between two words, where a tokenizer's pre-split already
    cuts, rather than inside the word two prompts began to differ in."""
    at = len(text) - 1
    while at > 0 and not (text[at].isspace() and not text[at - 1].isspace()):
        at -= 1
    return max(at, 0)


def _common_text(texts: Sequence[str]) -> str:
    """The longest prefix of every text. Halving the span still in doubt keeps each comparison a
    slice compare in C, so a million-token prompt takes milliseconds, not a Python loop per
    character (seconds)."""
    shortest, longest = min(texts), max(texts)  # the common prefix of all is that of these two
    low, high = 0, len(shortest)  # shortest[:low] is shared; nothing past shortest[:high] is
    while low < high:
        middle = (low + high + 1) // 2
        if shortest[low:middle] == longest[low:middle]:
            low = middle
        else:
            high = middle - 1
    return shortest[:low]
