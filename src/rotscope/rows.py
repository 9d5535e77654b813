"""The row of one work item as the run store gives it back: one type from the store to the views,
and the few rules every reader applies to rows the same way (which rows are scored, the error rate,
an instance's mean)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, cast


class Row(TypedDict):
    """One work item of ``run.db`` (see ``store.ITEM_COLUMNS``); columns added by later migrations
    are ``None`` in rows of older runs."""

    item_id: str
    call_id: str
    run_id: str
    plan_order: int
    task: str
    case_id: str
    instance_id: str
    control: int
    model: str
    backend: str
    length_target: int
    prompt_tokens: int
    haystack_tokens: int
    depth: float
    position: str | None
    spans: str
    trial: int
    seed: int
    prompt_digest: str
    question: str
    expected: str
    slices: str
    filler: str | None
    haystack_variant: int | None
    status: str
    response: str | None
    outcome: str | None
    category: str | None
    usage_prompt_tokens: int | None
    usage_completion_tokens: int | None
    cached_tokens: int | None
    latency_s: float | None
    cost: float | None
    error: str | None
    attempts: int
    created_at: str
    finished_at: str | None
    claim_report: str | None
    cached_response: int
    judge_verdict: str | None
    judge_model: str | None
    judge_prompt_sha256: str | None
    judge_response: str | None
    request_attempts: int | None
    engine_mode: str | None
    cached_source: str | None


class PlannedRow(TypedDict):
    """The planned columns of one work item as a run writes them (``store.PLANNED_COLUMNS``)."""

    item_id: str
    call_id: str
    run_id: str
    plan_order: int
    task: str
    case_id: str
    instance_id: str
    haystack_variant: int | None
    control: int
    model: str
    backend: str
    length_target: int
    prompt_tokens: int
    haystack_tokens: int
    depth: float
    position: str | None
    filler: str | None
    spans: str
    trial: int
    seed: int
    prompt_digest: str
    question: str
    expected: str
    slices: str


class ResultValues(TypedDict, total=False):
    """The result columns a finished call writes for one of its rows (``store.RESULT_COLUMNS``):
    the ones it knows, the others keep their stored values."""

    status: str
    response: str | None
    outcome: str | None
    category: str | None
    usage_prompt_tokens: int | None
    usage_completion_tokens: int | None
    cached_tokens: int | None
    cached_source: str | None
    latency_s: float | None
    cost: float | None
    error: str | None
    claim_report: str | None
    cached_response: int
    judge_verdict: str | None
    judge_model: str | None
    judge_prompt_sha256: str | None
    judge_response: str | None
    request_attempts: int | None
    engine_mode: str | None


def column(row: Row, name: str) -> Any:
    """A column chosen at run time (grouping keys, instance keys)."""
    return cast(Mapping[str, Any], row)[name]


def scored(rows: Iterable[Row]) -> list[Row]:
    """Rows with a score: finished and not an error (pending and error rows are never scored)."""
    return [row for row in rows if row["status"] == "ok"]


def group_by(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    """Rows by the values of ``keys``, sorted by them (``None`` sorts as the text "None")."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[tuple(column(row, key) for key in keys)].append(row)
    return dict(sorted(groups.items(), key=lambda item: tuple(str(v) if v is None else v for v in item[0])))


def instance_means(rows: Iterable[Row], key: str = "instance_id") -> dict[str, float]:
    """Each instance's mean correctness over its scored items."""
    by_instance: dict[str, list[int]] = defaultdict(list)
    for row in scored(rows):
        by_instance[column(row, key)].append(int(row["outcome"] == "correct"))
    return {instance: sum(v) / len(v) for instance, v in by_instance.items()}


def error_rate(rows: Iterable[Row]) -> float:
    """Errors among the rows that were attempted: a pending row is neither an error nor a success
    (an unfinished run is said to be unfinished, not to have failed)."""
    attempted = [row for row in rows if row["status"] != "pending"]
    return sum(row["status"] == "error" for row in attempted) / len(attempted) if attempted else 0.0


def partial_credit(row: Row) -> dict[str, float]:
    """The row's partial credit by measure name: its claim report's ``partial``, or, in a row
    stored before measures were named, the report's own ``recall`` / ``similarity`` field."""
    report = row.get("claim_report")
    if not report:
        return {}
    found = json.loads(report)
    partial = found.get("partial")
    if isinstance(partial, dict):
        return {str(name): float(value) for name, value in partial.items() if value is not None}
    return {name: float(found[name]) for name in ("recall", "similarity") if found.get(name) is not None}
