"""``rotscope export --format csv|jsonl`` read back by ``rotscope import``: a run's own rows carry
their case, instance, planned length, place, outcome, trial, control and haystack variant under the
store's names (``store.ITEM_COLUMNS``), which this maps onto the import's columns (docs/commands.md,
``rotscope import``), so an exported run imports to the same cells and gaps. Only what the views
need crosses: a row's question, reply, prompt digest and spans stay behind, and a row that has no
outcome (pending, or in error) is left out, as no statistic reads it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

EXPORT_COLUMNS = frozenset({"case_id", "instance_id", "length_target", "status", "outcome"})
"""The store's columns that mark a row as rotscope's own export."""
OUTCOME_SCORE = {"correct": 1, "incorrect": 0, "abstained": 0}
"""A stored outcome as the import's ``correct`` (an abstention is not correct)."""
PASSED = ("task", "model", "trial", "control", "depth", "position", "haystack_variant",
          "answer_logprob", "answer_tokens", "first_token_prob", "absent_logprob")  # fmt: skip
"""Columns kept under the same name."""
IMPORT_NAMES = ("item_id", "instance_id", "length_tokens", "correct", "prompt_tokens", "cost_usd", *PASSED)
"""The import's columns an exported row becomes."""


def is_export(names: set[str]) -> bool:
    """Whether a file's columns (a CSV header, a JSON line's keys) are rotscope's export."""
    return names >= EXPORT_COLUMNS


def import_values(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The import's columns of one exported row; ``None`` for a row without an outcome."""
    status, outcome = values.get("status"), values.get("outcome")
    if status != "ok" or outcome not in OUTCOME_SCORE:
        return None
    used = values.get("usage_prompt_tokens")
    found = {
        "item_id": values.get("case_id"),
        "instance_id": values.get("instance_id"),
        "length_tokens": values.get("length_target"),
        "correct": OUTCOME_SCORE[str(outcome)],
        "prompt_tokens": used if used not in (None, "") else values.get("prompt_tokens"),
        "cost_usd": values.get("cost"),
    }
    found.update({name: values.get(name) for name in PASSED})
    if found.get("position") in (None, ""):
        found["position"] = None  # a fraction: the depth says where
    return found


def converted(lines: Iterator[Any], make: Any) -> Iterator[Any]:
    """Each line of an export as the import's line (``make(line, values)``), unfinished rows left
    out; a line that is not an exported row passes unchanged."""
    for line in lines:
        if not is_export(set(line.values)):
            yield line
            continue
        values = import_values(line.values)
        if values is not None:
            yield make(line, values)
