"""Cache controls: the same items once with a warm prefix cache (the run itself) and once cold.

A local engine that reuses the KV cache of a shared prefix must answer exactly as it does from
scratch; at temperature 0 on a deterministic engine any differing reply is a runtime correctness
incident, not noise. Where replies may vary (sampling, remote APIs), a paired sign test on
correctness decides whether the difference is systematic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rotscope.errors import BadInput
from rotscope.rows import Row
from rotscope.scoring.deterministic import score_parts
from rotscope.store import RunStore
from rotscope.types import Backend, Completion, WorkItem


@runtime_checkable
class CacheClearing(Protocol):
    def clear_cache(self) -> None:
        """Forget every evaluated prefix: the next prompt is evaluated from its first token."""
        ...


def require_clearable(backend: Backend) -> CacheClearing:
    if not backend.capabilities.clearable_cache or not isinstance(backend, CacheClearing):
        raise BadInput(f"cache_control: backend of {backend.model_id} cannot clear its cache")
    return backend


def _sample(items: Sequence[WorkItem], rows: list[Row], size: int, seed: int) -> list[WorkItem]:
    """A seeded sample of finished calls not checked yet, preferring those served from the cache."""
    finished = {row["call_id"]: row for row in rows if row["status"] == "ok"}
    calls = {item.item_id: item for item in items if item.item_id in finished}
    warm = [call for call in calls if (finished[call]["cached_tokens"] or 0) > 0]
    pool = sorted(warm) if len(warm) >= size else sorted(calls)
    return [calls[call] for call in random.Random(seed).sample(pool, min(size, len(pool)))]


def _correct_fraction(item: WorkItem, text: str) -> float:
    scores = score_parts(item.case, Completion(text=text), filler=item.prompt.filler_text())
    return sum(score.outcome == "correct" for score in scores) / len(scores)


async def run_cache_checks(
    items: Sequence[WorkItem], backend: Backend, store: RunStore, size: int, seed: int
) -> int:
    """Re-run a seeded sample of finished calls cold and store each comparison; returns how many."""
    clearing = require_clearable(backend)
    checked = {check["call_id"] for check in store.cache_checks()}
    rows = store.rows()
    sample = [item for item in _sample(items, rows, size, seed) if item.item_id not in checked]
    warm_rows = {row["call_id"]: row for row in rows}
    for item in sample:
        warm = warm_rows[item.item_id]
        clearing.clear_cache()
        cold = await backend.generate(item.request())
        store.record_cache_check(
            {
                "call_id": item.item_id,
                "warm_response": warm["response"],
                "cold_response": cold.text,
                "warm_cached_tokens": warm["cached_tokens"],
                "cold_cached_tokens": cold.cached_tokens,
                "warm_correct": _correct_fraction(item, warm["response"] or ""),
                "cold_correct": None if cold.error else _correct_fraction(item, cold.text),
                "error": cold.error,
            }
        )
    return len(sample)
