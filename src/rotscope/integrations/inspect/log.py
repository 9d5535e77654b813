"""A rotscope run as an Inspect log (``rotscope export RUN --format inspect -o RUN.eval``): one
sample per work item with the exact messages sent, the reply, rotscope's score and its metadata,
so ``inspect view`` browses the run and Inspect's dataframes analyse it.

The log's metrics are the run summary's own numbers (``rotscope show --json``): each cell's
accuracy (correct over scored items), with its instance-level interval in the metric's metadata,
and each control's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage
from inspect_ai.scorer import Score

from rotscope._version import __version__
from rotscope.analysis.summary import load_summary
from rotscope.errors import BadInput
from rotscope.integrations.inspect.cells import cell_label
from rotscope.integrations.inspect.dataset import to_messages
from rotscope.integrations.inspect.scorer import VALUES
from rotscope.records.cells import Counts
from rotscope.records.summary import Summary
from rotscope.rows import Row
from rotscope.store import RunStore

SCORER = "deterministic"


def _metadata(row: Row) -> dict[str, Any]:
    return {
        "task": row["task"],
        "case_id": row["case_id"],
        "instance_id": row["instance_id"],
        "control": bool(row["control"]),
        "length": row["length_target"],
        "prompt_tokens": row["prompt_tokens"],
        "haystack_tokens": row["haystack_tokens"],
        "depth": row["depth"],
        "position": row["position"],
        "filler": row["filler"],
        "cell": cell_label(row["task"], row["length_target"], row["depth"], row["position"], row["filler"]),
        "trial": row["trial"],
        "spans": json.loads(row["spans"] or "[]"),
        "slices": json.loads(row["slices"] or "{}"),
        "question": row["question"],
        "expected": row["expected"],
        "status": row["status"],
        "outcome": row["outcome"],
        "category": row["category"],
        "item_id": row["item_id"],
        "call_id": row["call_id"],
        "prompt_digest": row["prompt_digest"],
        "latency_s": row["latency_s"],
        "cost": row["cost"],
        "cached_response": bool(row["cached_response"]),
        "engine_mode": row["engine_mode"],
    }


def _sample(row: Row, messages: list[dict[str, str]], model: str) -> EvalSample:
    sent = to_messages(messages)
    reply = row["response"] or ""
    usage = ModelUsage(
        input_tokens=(row["usage_prompt_tokens"] or 0) - (row["cached_tokens"] or 0),
        output_tokens=row["usage_completion_tokens"] or 0,
        total_tokens=(row["usage_prompt_tokens"] or 0) + (row["usage_completion_tokens"] or 0),
        input_tokens_cache_read=row["cached_tokens"] or None,
    )
    scores = None
    if row["status"] == "ok" and row["outcome"] is not None:
        value = VALUES.get(row["outcome"], "I")
        found = {"outcome": row["outcome"], "category": row["category"]}
        scores = {SCORER: Score(value=value, answer=reply, explanation=row["category"], metadata=found)}
    error = None
    if row["status"] == "error":
        error = EvalError(message=row["error"] or "error", traceback="", traceback_ansi="")
    return EvalSample(
        id=row["item_id"],
        epoch=1,
        input=sent,
        target=row["expected"] or "",
        messages=[*sent, ChatMessageAssistant(content=reply)] if row["status"] == "ok" else sent,
        output=ModelOutput.from_content(model=model, content=reply),
        scores=scores,
        metadata=_metadata(row),
        model_usage={model: usage} if row["usage_prompt_tokens"] is not None else {},
        total_time=row["latency_s"],
        error=error,
    )


def _accuracy(counts: Counts) -> float | None:
    judged = counts.n - counts.errors - (counts.pending or 0)
    return counts.correct / judged if judged else None


def _metrics(summary: Summary, samples: list[EvalSample]) -> dict[str, EvalMetric]:
    """Inspect's overall accuracy over the scored samples, then the summary's cells and controls."""
    values = [sample.scores[SCORER].value == "C" for sample in samples if sample.scores]
    metrics = {"accuracy": EvalMetric(name="accuracy", value=sum(values) / len(values) if values else 0.0)}
    for cell in summary.cells:
        accuracy = cell.accuracy
        if accuracy is None:
            continue
        name = "accuracy " + cell_label(cell.task, cell.length, cell.depth, cell.position, cell.filler)
        interval = {"ci_low": cell.ci_low, "ci_high": cell.ci_high, "n": cell.n}
        metrics[name] = EvalMetric(name=name, group="cells", value=accuracy, metadata=interval)
    for control in summary.controls:
        accuracy = _accuracy(control)
        if accuracy is not None:
            name = f"accuracy {control.task} {control.length} absent"
            metrics[name] = EvalMetric(name=name, group="controls", value=accuracy)
    return metrics


def run_log(run_dir: Path) -> EvalLog:
    """The Inspect log of a run folder."""
    summary = load_summary(run_dir)
    if summary.imported:
        raise BadInput(
            f"{run_dir}: {summary.imported.note}: no prompts to put in an Inspect log; "
            "export it with --format csv, jsonl or parquet"
        )
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        messages = {row["prompt_digest"]: store.prompt_messages(row["prompt_digest"]) for row in rows}
    model = f"rotscope/{summary.model}"
    samples = [_sample(row, messages[row["prompt_digest"]], model) for row in rows]
    created = min((row["created_at"] for row in rows), default="")
    finished = max((row["finished_at"] or "" for row in rows), default="")
    backend = summary.backend or {}
    spec = EvalSpec(
        created=created or finished,
        run_id=summary.run,
        task_id=summary.run,
        task=f"rotscope/{summary.task}",
        task_attribs={},
        dataset=EvalDataset(name="rotscope", samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model,
        config=EvalConfig(),
        packages={"rotscope": __version__},
        metadata={
            "run": summary.run,
            "tokenizer": backend.get("tokenizer"),
            "tokenizer_digest": backend.get("tokenizer_digest"),
            "spans": "token spans under the run's own tokenizer (the model's): exact",
            "experiment": summary.config,
            # the log's metadata is JSON: the summary's own, as show --json prints it
            "effective_lengths": summary.effective_lengths.model_dump(),
        },
    )
    scored = sum(sample.scores is not None for sample in samples)
    results = EvalResults(
        total_samples=len(samples),
        completed_samples=scored,
        scores=[
            EvalScore(
                name=SCORER,
                scorer=SCORER,
                scored_samples=scored,
                unscored_samples=len(samples) - scored,
                metrics=_metrics(summary, samples),
            )
        ],
    )
    done = all(row["status"] != "pending" for row in rows)
    return EvalLog(
        status="success" if done else "started",
        eval=spec,
        results=results,
        stats=EvalStats(started_at=created, completed_at=finished if done else ""),
        samples=samples,
    )


def export_inspect_log(run_dir: Path, output: Path) -> int:
    """Write the run's Inspect log to ``output`` (``.eval``, or ``.json``); returns its samples."""
    if output.suffix not in (".eval", ".json"):
        raise BadInput(f"-o: {output} must end in .eval or .json (Inspect's log formats)")
    log = run_log(run_dir)
    try:
        write_eval_log(log, str(output), format="eval" if output.suffix == ".eval" else "json")
    except OSError as error:
        raise BadInput(f"-o: cannot write {output}: {error.strerror or error}") from None
    return len(log.samples or [])
