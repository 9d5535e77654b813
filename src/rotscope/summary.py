"""The summary JSON of a run (design.md contract), built from the run store and the statistics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rotscope.stats import base_score, effective_length, wilson
from rotscope.store import RunStore

EFFECTIVE_LENGTH_DEFINITION = "nolima-0.85"


def _instance_score(rows: Iterable[dict[str, Any]]) -> tuple[float, int]:
    """(successes, instances): each instance contributes the mean of its scored items."""
    by_instance: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if row["status"] == "ok":
            by_instance[row["instance_id"]].append(int(row["outcome"] == "correct"))
    return sum(sum(v) / len(v) for v in by_instance.values()), len(by_instance)


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    outcomes = [row["outcome"] for row in rows if row["status"] == "ok"]
    return {
        "n": len(rows),
        "instances": len({row["instance_id"] for row in rows}),
        "correct": outcomes.count("correct"),
        "incorrect": outcomes.count("incorrect"),
        "abstained": outcomes.count("abstained"),
        "errors": sum(row["status"] == "error" for row in rows),
        "pending": sum(row["status"] == "pending" for row in rows),
    }


def _cell(key: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = _counts(rows)
    scored = counts["n"] - counts["errors"] - counts["pending"]
    successes, instances = _instance_score(rows)
    low, high = wilson(successes, instances)
    return {
        **key,
        **counts,
        "accuracy": counts["correct"] / scored if scored else None,
        "ci_low": low if instances else None,
        "ci_high": high if instances else None,
    }


def _group(rows: Iterable[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[key] for key in keys)].append(row)
    return dict(sorted(groups.items()))


def build_summary(store: RunStore, run_dir: Path) -> dict[str, Any]:
    meta = store.meta()
    rows = store.rows()
    probes = [row for row in rows if not row["control"]]
    controls = [row for row in rows if row["control"]]
    cells = [
        _cell({"task": task, "length": length, "depth": depth, "position": position}, group)
        for (task, length, depth, position), group in _group(
            probes, "task", "length_target", "depth", "position"
        ).items()
    ]
    per_length = {
        length: _cell({"length": length}, group)
        for (length,), group in _group(probes, "length_target").items()
    }
    scores = {length: cell["accuracy"] for length, cell in per_length.items() if cell["accuracy"] is not None}
    base = base_score(scores) if scores else None
    done = [row for row in rows if row["status"] == "ok"]
    tokens = meta.get("tokens", {})
    return {
        "run": run_dir.name,
        "model": meta.get("model"),
        "task": ",".join(dict.fromkeys(row["task"] for row in rows)),
        "cells": cells,
        "lengths": list(per_length.values()),
        "controls": [
            {
                "task": task,
                "length": length,
                **_counts(group),
                "hallucinated": sum(row["category"] == "hallucinated" for row in group),
            }
            for (task, length), group in _group(controls, "task", "length_target").items()
        ],
        "effective_length": {
            "definition": EFFECTIVE_LENGTH_DEFINITION,
            "value": effective_length(scores, base=base) if scores else None,
            "base_score": base,
        },
        "items": {
            "total": len(rows),
            "done": len(done),
            "errors": sum(row["status"] == "error" for row in rows),
            "rejected_prompts": len(meta.get("rejected", [])),
        },
        "tokens": {
            "naive_prefill": tokens.get("naive_prefill", 0),
            "lower_bound": tokens.get("lower_bound", 0),
            "evaluated": sum((row["usage_prompt_tokens"] or 0) - (row["cached_tokens"] or 0) for row in done),
            "cached": sum(row["cached_tokens"] or 0 for row in done),
        },
        "corpus": meta.get("corpus"),
        "backend": meta.get("backend"),
    }


def load_summary(run_dir: Path | str) -> dict[str, Any]:
    """The summary JSON (design.md contract) of a run folder."""
    run_dir = Path(run_dir)
    store = RunStore.open_existing(run_dir)
    try:
        return build_summary(store, run_dir)
    finally:
        store.close()
