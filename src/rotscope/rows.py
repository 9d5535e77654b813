"""The row of one work item as the run store gives it back: one type from the store to the views,
and the few rules every reader applies to rows the same way (which rows are scored, the error rate,
an instance's mean)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast

from rotscope.types.case import ABSENT_SUFFIX

ScoreName = Literal["accuracy", "likelihood"]
"""What a statistic stands on (docs/statistics.md, "Scores"): ``accuracy``, each row 1 where its
reply was right, else 0; ``likelihood``, each row the probability the model gave the gold answer
(``exp(answer_logprob)``), read in the prefill with the reply teacher-forced."""
SCORES: tuple[ScoreName, ...] = ("accuracy", "likelihood")


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
    fault: str | None
    """The assembly faults injected into the prompt (``run --inject``), comma-separated; ``None``:
    the prompt as rendered."""
    evidence_lost: str | None
    """A JSON list of the evidence ids those faults removed from the prompt (``[]``: all kept)."""
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
    answer_logprob: float | None
    """The gold answer's total log-probability (natural log) after the prompt, teacher-forced: the
    best of its accepted forms; ``None`` where it was not read (``run --score accuracy``, a backend
    that cannot, a question of a multi-question prompt, a rule to follow)."""
    answer_tokens: int | None
    """The tokens of that form, counted by the model's own tokenizer."""
    first_token_prob: float | None
    """The probability of its first token."""
    absent_logprob: float | None
    """The same answer's log-probability in the case's evidence-absent control at the same length
    (``None``: no control, or not read)."""
    separation: int | float | None
    """The distance asked between the facts a case combines (``placement.separations``): filler
    tokens (an int) or a share of the filler (a float); ``None`` where the run has no such axis."""
    separation_asked: int | None
    """The filler tokens that separation asked for between consecutive facts."""
    separation_tokens: int | None
    """The filler tokens measured between them on the rendered prompt (the mean gap, several facts)."""
    score_value: NotRequired[float]
    """Set by ``on_score`` only: the row's value under the chosen score (``value``)."""


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
    fault: str | None
    evidence_lost: str | None
    separation: NotRequired[int | float | None]
    """The layout's separation (``placement.separations``); left out by rows without the axis."""
    separation_asked: NotRequired[int | None]
    """The filler tokens the separation asked for between consecutive facts."""
    separation_tokens: NotRequired[int | None]
    """The filler tokens measured between them on the rendered prompt (their mean, several facts)."""


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
    answer_logprob: float | None
    answer_tokens: int | None
    first_token_prob: float | None
    absent_logprob: float | None


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


def value(row: Row) -> float:
    """The row's score: its value under the score ``on_score`` chose, else 1.0 where its reply was
    right and 0.0 where not (accuracy)."""
    chosen = row.get("score_value")
    return float(row["outcome"] == "correct") if chosen is None else chosen


def answer_probability(row: Row) -> float | None:
    """The probability the model gave the gold answer (``exp(answer_logprob)``), ``None`` unread."""
    logprob = row.get("answer_logprob")
    return None if logprob is None else math.exp(logprob)


def has_likelihood(rows: Iterable[Row]) -> bool:
    """Whether any scored row has the gold answer's likelihood."""
    return any(row.get("answer_logprob") is not None for row in scored(rows))


def has_replies(rows: Iterable[Row]) -> bool:
    """Whether any scored row was scored on a reply (a ``--score likelihood`` run has none)."""
    return any(row["outcome"] is not None for row in scored(rows))


def on_score(rows: Iterable[Row], score: ScoreName) -> list[Row]:
    """The rows a statistic on ``score`` reads. ``accuracy``: the rows as they are. ``likelihood``:
    each scored row with its answer's probability as its value (``value``), pending and error rows
    as they are (never scored), and scored rows without a likelihood left out (a question of a
    multi-question prompt, a rule to follow: nothing to read)."""
    if score == "accuracy":
        return list(rows)
    chosen: list[Row] = []
    for row in rows:
        if row["status"] != "ok":
            chosen.append(row)
        elif (probability := answer_probability(row)) is not None:
            chosen.append(cast(Row, {**row, "score_value": probability}))
    return chosen


def is_continuous(rows: Iterable[Row]) -> bool:
    """Whether the rows stand on a continuous score (``on_score`` gave a row its ``score_value``):
    a statistic whose interval or test is one for 0/1 values (Wilson, the binomial) takes its
    continuous form on these (docs/statistics.md, "Scores")."""
    return any(row.get("score_value") is not None for row in rows)


def absent_case_id(case_id: str) -> str:
    """The case id of a case's evidence-absent control (``Case.absent_control``)."""
    return f"{case_id}{ABSENT_SUFFIX}"


def instance_means(rows: Iterable[Row], key: str = "instance_id") -> dict[str, float]:
    """Each instance's mean score (``value``: correctness, or the chosen score) over its scored items."""
    by_instance: dict[str, list[float]] = defaultdict(list)
    for row in scored(rows):
        by_instance[column(row, key)].append(value(row))
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
