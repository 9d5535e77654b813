"""Cache controls: the same items once with a warm prefix cache (the run itself) and once cold.

A local engine that reuses the KV cache of a shared prefix must answer exactly as it does from
scratch; at temperature 0 on a deterministic engine any differing reply is a runtime correctness
incident, not noise. Where replies may vary (sampling, remote APIs), a paired sign test on
correctness decides whether the difference is systematic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rotscope.errors import BadInput
from rotscope.scoring.deterministic import score_parts
from rotscope.stats import sign_test
from rotscope.store import RunStore
from rotscope.types import Backend, Completion, GenerateRequest, WorkItem

DETERMINISTIC_RULE = "any differing reply (deterministic engine at temperature 0)"
PAIRED_RULE = "paired sign test on correctness, p < alpha"
_EXAMPLES = 3


@runtime_checkable
class CacheClearing(Protocol):
    def clear_cache(self) -> None:
        """Forget every evaluated prefix: the next prompt is evaluated from its first token."""
        ...


def require_clearable(backend: Backend) -> CacheClearing:
    if not backend.capabilities.clearable_cache or not isinstance(backend, CacheClearing):
        raise BadInput(f"cache_control: backend of {backend.model_id} cannot clear its cache")
    return backend


def _sample(items: Sequence[WorkItem], rows: list[dict[str, Any]], size: int, seed: int) -> list[WorkItem]:
    """A seeded sample of finished calls not checked yet, preferring those served from the cache."""
    finished = {row["call_id"]: row for row in rows if row["status"] == "ok"}
    calls = {item.item_id: item for item in items if item.item_id in finished}
    warm = [call for call in calls if (finished[call]["cached_tokens"] or 0) > 0]
    pool = sorted(warm) if len(warm) >= size else sorted(calls)
    return [calls[call] for call in random.Random(seed).sample(pool, min(size, len(pool)))]


def _correct_fraction(item: WorkItem, text: str) -> float:
    scores = score_parts(item.case, Completion(text=text), context=item.prompt.messages[-1]["content"])
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
        cold = await backend.generate(
            GenerateRequest(item.prompt.messages, item.prompt.token_ids, item.params)
        )
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


def summarise_checks(
    checks: list[dict[str, Any]], deterministic: bool, alpha: float
) -> dict[str, Any] | None:
    """The ``cache_control`` block of the summary, or ``None`` when no check ran."""
    if not checks:
        return None
    compared = [check for check in checks if check["error"] is None]
    differing = [check for check in compared if check["warm_response"] != check["cold_response"]]
    p_value: float | None = None
    if deterministic:
        incident = bool(differing)
    else:
        p_value = sign_test([check["cold_correct"] - check["warm_correct"] for check in compared])
        incident = p_value < alpha
    return {
        "checked": len(checks),
        "compared": len(compared),
        "errors": len(checks) - len(compared),
        "differing": len(differing),
        "warm_correct": sum(check["warm_correct"] for check in compared),
        "cold_correct": sum(check["cold_correct"] for check in compared),
        "rule": DETERMINISTIC_RULE if deterministic else PAIRED_RULE,
        "p_value": p_value,
        "incident": incident,
        "examples": [
            {key: check[key] for key in ("call_id", "warm_response", "cold_response")}
            for check in differing[:_EXAMPLES]
        ],
    }
