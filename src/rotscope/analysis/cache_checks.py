"""The summary of cache controls: warm and cold answers of the same items compared (see
``rotscope.execution.calls.cachecheck``, which runs them)."""

from __future__ import annotations

from typing import Any

from rotscope.records.run import CacheControl, CacheExample
from rotscope.stats.paired import sign_test

DETERMINISTIC_RULE = "any differing reply (deterministic engine at temperature 0)"
PAIRED_RULE = "paired sign test on correctness, p < alpha"
_EXAMPLES = 3


def summarise_checks(checks: list[dict[str, Any]], deterministic: bool, alpha: float) -> CacheControl | None:
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
    return CacheControl(
        checked=len(checks),
        compared=len(compared),
        errors=len(checks) - len(compared),
        differing=len(differing),
        warm_correct=sum(check["warm_correct"] for check in compared),
        cold_correct=sum(check["cold_correct"] for check in compared),
        rule=DETERMINISTIC_RULE if deterministic else PAIRED_RULE,
        p_value=p_value,
        incident=bool(incident),
        examples=[
            CacheExample(
                call_id=check["call_id"],
                warm_response=check["warm_response"],
                cold_response=check["cold_response"],
            )
            for check in differing[:_EXAMPLES]
        ],
    )
