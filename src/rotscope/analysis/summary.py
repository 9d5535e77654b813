"""The summary JSON of a run (design.md contract), built from the run store and the statistics."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rotscope.analysis.cases import case_results
from rotscope.config import OFFSET_PREFIX
from rotscope.execution.cachecheck import summarise_checks
from rotscope.stats import (
    absolute_effective_length,
    base_score,
    benjamini_hochberg,
    calibration,
    choose_base_lengths,
    effective_length,
    paired_gap,
    proportion_interval,
    sign_test,
)
from rotscope.store import RunStore
from rotscope.tasks.reasoning.family import FILLER_ANSWER, LAYOUT_COPIES
from rotscope.types import EVIDENCE_ONLY_POSITION

JUDGED = ("correct", "incorrect", "abstained")
DEFAULT_MAX_ERROR_RATE = 0.05
NOLIMA_RATIO = 0.85
RULER_THRESHOLD = 0.856
Row = dict[str, Any]


def _scored(rows: Iterable[Row]) -> list[Row]:
    return [row for row in rows if row["status"] == "ok"]


def instance_means(rows: Iterable[Row], key: str = "instance_id") -> dict[str, float]:
    """Each instance's mean correctness over its scored items."""
    by_instance: dict[str, list[int]] = defaultdict(list)
    for row in _scored(rows):
        by_instance[row[key]].append(int(row["outcome"] == "correct"))
    return {instance: sum(v) / len(v) for instance, v in by_instance.items()}


def _counts(rows: list[Row]) -> dict[str, int]:
    outcomes = Counter(row["outcome"] for row in _scored(rows))
    return {
        "n": len(rows),
        "instances": len({row["instance_id"] for row in rows}),
        "correct": outcomes["correct"],
        "incorrect": outcomes["incorrect"],
        "abstained": outcomes["abstained"],
        "errors": sum(row["status"] == "error" for row in rows),
        "pending": sum(row["status"] == "pending" for row in rows),
        "judged": sum(row.get("judge_verdict") in JUDGED for row in _scored(rows)),
    }


def error_rate(counts: dict[str, int]) -> float:
    """Errors among the items that were attempted (pending items are neither)."""
    attempted = counts["n"] - counts["pending"]
    return counts["errors"] / attempted if attempted else 0.0


def _cell(key: dict[str, Any], rows: list[Row]) -> dict[str, Any]:
    counts = _counts(rows)
    scored = counts["n"] - counts["errors"] - counts["pending"]
    means = instance_means(rows)
    low, high = proportion_interval(sum(means.values()), len(means))
    categories = Counter(row["category"] for row in _scored(rows) if row["category"])
    return {
        **key,
        **counts,
        "accuracy": counts["correct"] / scored if scored else None,
        "instance_correct": sum(means.values()),
        "ci_low": low if means else None,
        "ci_high": high if means else None,
        "error_rate": error_rate(counts),
        "categories": dict(sorted(categories.items())),
    }


def _cell_key(
    task: str, length: int, depth: float, position: str | None, filler: str | None
) -> dict[str, Any]:
    """A cell's identity. Cells of a family with named layouts and filler types (reasoning) carry the
    layout's name in ``layout`` and in ``depth``, and the filler type in ``filler``."""
    if filler is None:
        return {"task": task, "length": length, "depth": depth, "position": position}
    return {"task": task, "length": length, "depth": position, "position": position, "layout": position,
            "filler": filler}  # fmt: skip


def _group(rows: Iterable[Row], *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[key] for key in keys)].append(row)
    return dict(sorted(groups.items(), key=lambda item: tuple(str(v) if v is None else v for v in item[0])))


def _effective_lengths(per_length: dict[int, dict[str, Any]], rows: list[Row]) -> dict[str, Any]:
    """Effective length by both definitions, from point estimates and from lower bounds. The base
    interval counts each case once over the base lengths. With a base score of 0 there is no signal
    to lose, so the relative definition has no value."""
    points = {length: cell["accuracy"] for length, cell in per_length.items() if cell["accuracy"] is not None}
    lows = {length: cell["ci_low"] for length, cell in per_length.items() if cell["ci_low"] is not None}
    if not points:
        return {"definition": f"nolima-{NOLIMA_RATIO}", "value": None, "base_score": None, "definitions": []}
    base = base_score(points)
    base_lengths = choose_base_lengths(list(points))
    per_case = instance_means((row for row in rows if row["length_target"] in base_lengths), "case_id")
    relative = effective_length(points, base=base, ratio=NOLIMA_RATIO) if base > 0 else None
    return {
        "definition": f"nolima-{NOLIMA_RATIO}",
        "value": relative,
        "base_score": base,
        "base_lengths": base_lengths,
        "base_ci": list(proportion_interval(sum(per_case.values()), len(per_case))),
        "definitions": [
            {
                "definition": f"nolima-{NOLIMA_RATIO}",
                "value": relative,
                "conservative": effective_length(lows, base=base, ratio=NOLIMA_RATIO) if base > 0 else None,
            },
            {
                "definition": f"absolute-{RULER_THRESHOLD}",
                "value": absolute_effective_length(points, RULER_THRESHOLD),
                "conservative": absolute_effective_length(lows, RULER_THRESHOLD),
            },
        ],
    }


def _position_effect(task_rows: list[Row], depths: list[float]) -> list[dict[str, Any]]:
    """Per length: worst position, range, middle-vs-ends sign test, cells below the row's best.
    Benjamini-Hochberg runs over the lengths (middle vs ends) and over all cell comparisons."""
    ends = {min(depths), max(depths)}
    middle = [d for d in depths if d not in ends]
    results: list[dict[str, Any]] = []
    tests: list[tuple[int, float]] = []
    comparisons: list[tuple[int, float, float]] = []
    for (length,), rows in _group(task_rows, "length_target").items():
        by_depth = {
            depth: instance_means(group, "case_id") for (depth,), group in _group(rows, "depth").items()
        }
        accuracy = {d: sum(m.values()) / len(m) for d, m in by_depth.items() if m}
        if not accuracy:
            continue
        best = max(accuracy, key=lambda d: accuracy[d])
        worst = min(accuracy, key=lambda d: accuracy[d])
        entry: dict[str, Any] = {
            "length": length,
            "worst_depth": worst,
            "best_depth": best,
            "range": accuracy[best] - accuracy[worst],
            "middle_vs_ends": None,
            "flagged_depths": [],
        }
        results.append(entry)
        if middle:
            cases = set.intersection(*(set(by_depth.get(d, {})) for d in depths))
            differences = [
                sum(by_depth[d][c] for d in middle) / len(middle)
                - sum(by_depth[d][c] for d in ends) / len(ends)
                for c in sorted(cases)
            ]
            if differences:
                tests.append((len(results) - 1, sign_test(differences)))
                entry["middle_vs_ends"] = {
                    "difference": sum(differences) / len(differences),
                    "pairs": len(cases),
                }
        for depth in accuracy:
            if depth == best:
                continue
            shared = sorted(set(by_depth[best]) & set(by_depth[depth]))
            differences = [by_depth[best][c] - by_depth[depth][c] for c in shared]
            comparisons.append((len(results) - 1, depth, sign_test(differences)))
    reject, adjusted = benjamini_hochberg([p for _, p in tests])
    for (index, p_value), significant, p_adjusted in zip(tests, reject, adjusted, strict=True):
        effect = results[index]["middle_vs_ends"]
        effect.update({"p_value": p_value, "p_adjusted": p_adjusted, "significant": significant})
    reject, _ = benjamini_hochberg([p for _, _, p in comparisons])
    for (index, depth, _), significant in zip(comparisons, reject, strict=True):
        if significant:
            results[index]["flagged_depths"].append(depth)
    return results


def _layout_order(layout: str) -> int:
    order = list(LAYOUT_COPIES)
    return order.index(layout) if layout in order else len(order)


def _layout_drops(rows: list[Row]) -> list[dict[str, Any]]:
    """Per length and filler, each layout's drop from ``end``: end accuracy minus the layout's, paired
    on the items run in both, with a cluster-bootstrap interval."""
    drops = []
    for (length, filler), group in _group(rows, "length_target", "filler").items():
        by_layout = {
            layout: instance_means(layout_rows, "case_id")
            for (layout,), layout_rows in _group(group, "position").items()
        }
        end = by_layout.get("end")
        if end is None:
            continue
        for layout in sorted(by_layout, key=_layout_order):
            if layout == "end":
                continue
            gap = paired_gap(by_layout[layout], end)  # "long minus short": end minus this layout
            shared = sorted(set(end) & set(by_layout[layout]))
            drops.append(
                {
                    "length": length,
                    "filler": filler,
                    "layout": layout,
                    "end_accuracy": sum(end[k] for k in shared) / len(shared) if shared else None,
                    "layout_accuracy": (
                        sum(by_layout[layout][k] for k in shared) / len(shared) if shared else None
                    ),
                    "drop": gap.estimate,
                    "ci_low": gap.low,
                    "ci_high": gap.high,
                    "pairs": gap.pairs,
                    "method": gap.method,
                }
            )
    return drops


def _interference(rows: list[Row]) -> list[dict[str, Any]]:
    """Per filler and layout, where the wrong answers came from: the answer of a filler item, another
    number in the filler, neither; ``share_filler`` is over wrong answers that gave a number."""
    shares = []
    groups = _group(rows, "filler", "position")
    for filler, layout in sorted(groups, key=lambda key: (key[0], _layout_order(key[1]))):
        wrong = [row for row in _scored(groups[(filler, layout)]) if row["outcome"] == "incorrect"]
        counts = Counter(row["category"] for row in wrong)
        numbered = len(wrong) - counts["format"]
        matched = counts[FILLER_ANSWER] + counts["filler_number"]
        shares.append(
            {
                "filler": filler,
                "layout": layout,
                "wrong": len(wrong),
                "unparsed": counts["format"],
                "filler_answer": counts[FILLER_ANSWER],
                "filler_number": counts["filler_number"],
                "other": numbered - matched,
                "share_filler": matched / numbered if numbered else None,
                "share_filler_answer": counts[FILLER_ANSWER] / numbered if numbered else None,
            }
        )
    return shares


def _task_analysis(task: str, rows: list[Row]) -> dict[str, Any]:
    per_length = {
        length: _cell({"length": length}, group) for (length,), group in _group(rows, "length_target").items()
    }
    control_length = min(per_length)
    control_cell = per_length[control_length]
    short = instance_means((r for r in rows if r["length_target"] == control_length), "case_id")
    degradation = []
    for length in sorted(per_length):
        if length == control_length:
            continue
        long = instance_means((r for r in rows if r["length_target"] == length), "case_id")
        gap = paired_gap(short, long)
        degradation.append(
            {"length": length, "gap": gap.estimate, "ci_low": gap.low, "ci_high": gap.high,
             "pairs": gap.pairs, "method": gap.method}
        )  # fmt: skip
    layered = any(row["filler"] for row in rows)
    return {
        "task": task,
        "lengths": list(per_length.values()),
        "effective_length": _effective_lengths(per_length, rows),
        "calibration": {
            "length": control_length,
            "accuracy": control_cell["accuracy"],
            "ci_low": control_cell["ci_low"],
            "verdict": calibration(control_cell["accuracy"], control_cell["ci_low"]),
        },
        "degradation": degradation,
        # Reasoning layouts share depths (middle, middle_twice and middle_dup all sit at 0.5) and
        # fillers differ: their position effect is the paired end-minus-layout drop per filler.
        "position_effect": [] if layered else _position_effect(rows, sorted({row["depth"] for row in rows})),
        **(
            {"reasoning": {"drops": _layout_drops(rows), "interference": _interference(rows)}}
            if layered
            else {}
        ),
    }


def harness_overhead(rows: Iterable[Row], model: str | None) -> dict[str, Any] | None:
    """Provider-reported prompt tokens minus the local count, per call: the fixed cost of the
    server's template and system prompt that rotscope's lengths do not include."""
    per_call = {
        row["call_id"]: row["usage_prompt_tokens"] - row["prompt_tokens"]
        for row in _scored(rows)
        if row["usage_prompt_tokens"]
    }
    if not per_call:
        return None
    differences = list(per_call.values())
    return {
        "model": model,
        "calls": len(differences),
        "median": statistics.median(differences),
        "min": min(differences),
        "max": max(differences),
    }


def token_counts(meta: dict[str, Any], rows: list[Row]) -> dict[str, Any]:
    """How lengths were counted (``approximate`` when no tokenizer of the model was at hand)."""
    backend = meta.get("backend") or {}
    return {
        "method": backend.get("token_count", "exact"),
        "tokenizer": backend.get("tokenizer"),
        "overhead": harness_overhead(rows, meta.get("model")),
    }


def _pool_offset_depths(rows: list[Row]) -> list[Row]:
    """Rows of an absolute offset (``@N``) with the mean depth of their (task, length, offset): the
    depth N reaches differs a little between cases (their fixed parts differ), but one offset at
    one length is one cell."""
    depths: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for row in rows:
        if (row["position"] or "").startswith(OFFSET_PREFIX):
            depths[(row["task"], row["length_target"], row["position"])].append(row["depth"])
    means = {key: sum(values) / len(values) for key, values in depths.items()}
    return [
        {**row, "depth": means[(row["task"], row["length_target"], row["position"])]}
        if (row["task"], row["length_target"], row["position"]) in means
        else row
        for row in rows
    ]


def _error_cap(rows: list[Row], cells: list[dict[str, Any]], cap: float) -> dict[str, Any]:
    """The run's error rate against the configured cap, and the cells above the cap."""
    rate = error_rate(_counts(rows))
    return {
        "max_error_rate": cap,
        "error_rate": rate,
        "exceeded": rate > cap,
        "cells_over": [
            {
                "task": cell["task"],
                "length": cell["length"],
                "depth": cell["depth"],
                "position": cell["position"],
                **({"filler": cell["filler"]} if "filler" in cell else {}),
                "error_rate": cell["error_rate"],
            }
            for cell in cells
            if cell["error_rate"] > cap
        ],
    }


def _spend(rows: list[Row], config: dict[str, Any]) -> dict[str, Any]:
    finished = [row for row in rows if row["status"] != "pending"]
    return {
        "usd": sum(row["cost"] or 0.0 for row in finished),
        "priced": all(row["cost"] is not None for row in finished),
        "max_cost": config.get("max_cost"),
        "cached_responses": sum(bool(row["cached_response"]) for row in finished),
    }


def _judge(rows: list[Row], config: dict[str, Any]) -> dict[str, Any] | None:
    if not config.get("judge"):
        return None
    judged = [row for row in rows if row["judge_verdict"] is not None]
    return {
        "model": config["judge"]["model"],
        "prompt_sha256": sorted({row["judge_prompt_sha256"] for row in judged}),
        "verdicts": dict(sorted(Counter(row["judge_verdict"] for row in judged).items())),
    }


def build_summary(store: RunStore, run_dir: Path) -> dict[str, Any]:
    meta = store.meta()
    config = meta.get("config") or {}
    rows = _pool_offset_depths(store.rows())
    probes = [row for row in rows if not row["control"]]
    evidence_only = [row for row in rows if row["control"] and row["position"] == EVIDENCE_ONLY_POSITION]
    controls = [row for row in rows if row["control"] and row["position"] != EVIDENCE_ONLY_POSITION]
    per_case = case_results(probes, evidence_only)
    cells = [
        _cell(_cell_key(task, length, depth, position, filler), group)
        for (task, length, depth, position, filler), group in _group(
            probes, "task", "length_target", "depth", "position", "filler"
        ).items()
    ]
    per_length = {
        length: _cell({"length": length}, group)
        for (length,), group in _group(probes, "length_target").items()
    }
    done = _scored(rows)
    called = [
        row for row in done if not row["cached_response"]
    ]  # replies from the response cache cost no tokens
    tokens = meta.get("tokens", {})
    task_order = (meta.get("config") or {}).get("tasks") or []
    by_task = sorted(
        _group(probes, "task").items(),
        key=lambda item: task_order.index(item[0][0]) if item[0][0] in task_order else len(task_order),
    )
    return {
        "run": run_dir.name,
        "model": meta.get("model"),
        "task": ",".join(
            (meta.get("config") or {}).get("tasks") or dict.fromkeys(row["task"] for row in rows)
        ),
        "cells": cells,
        "lengths": list(per_length.values()),
        "effective_length": _effective_lengths(per_length, probes),
        "tasks": [_task_analysis(task, group) for (task,), group in by_task],
        "controls": [
            {
                "task": task,
                "length": length,
                **_counts(group),
                "hallucinated": sum(row["category"] == "hallucinated" for row in group),
            }
            for (task, length), group in _group(controls, "task", "length_target").items()
        ],
        "evidence_only": [
            {"task": task, **_counts(group), "accuracy": _cell({}, group)["accuracy"]}
            for (task,), group in _group(evidence_only, "task").items()
        ],
        "cases": per_case,
        "capability_failures": [entry["case_id"] for entry in per_case if entry["capability_failure"]],
        "positional_failures": [entry["case_id"] for entry in per_case if entry["positional_failure"]],
        "high_risk": sum(entry["forbidden_claims"] for entry in per_case),
        "items": {
            "total": len(rows),
            "done": len(done),
            "errors": sum(row["status"] == "error" for row in rows),
            "rejected_prompts": len(meta.get("rejected", [])),
        },
        "tokens": {
            "naive_prefill": tokens.get("naive_prefill", 0),
            "lower_bound": tokens.get("lower_bound", 0),
            "evaluated": sum(
                (row["usage_prompt_tokens"] or 0) - (row["cached_tokens"] or 0) for row in called
            ),
            "cached": sum(row["cached_tokens"] or 0 for row in called),
        },
        "token_counts": token_counts(meta, rows),
        "timing": {
            "latency_s": sum(row["latency_s"] or 0.0 for row in done),
            "started": min((row["created_at"] for row in rows), default=None),
            "finished": max((row["finished_at"] for row in rows if row["finished_at"]), default=None),
        },
        "execution": {
            "order": meta.get("order"),
            # Which reuse ran: the correctness of reuse is tested, but a reader should know.
            "prefix_cache": (meta.get("backend") or {}).get("options", {}).get("prefix_cache"),
            "state_cache_mb": (meta.get("backend") or {}).get("options", {}).get("state_cache_mb"),
            # A local engine's mode (llama.cpp extra buffers), why, and its worker's crashes.
            "engine": meta.get("engine"),
        },
        "error_cap": _error_cap(rows, cells, config.get("max_error_rate", DEFAULT_MAX_ERROR_RATE)),
        "cost": _spend(rows, config),
        "judge": _judge(rows, config),
        "corpus": meta.get("corpus"),
        "backend": meta.get("backend"),
        "config": meta.get("config"),
        "manifest_digest": meta.get("manifest_digest"),
        "plan": meta.get("plan"),
        "cache_control": summarise_checks(
            store.cache_checks(),
            deterministic=(meta.get("cache_control") or {}).get("deterministic", False),
            alpha=((meta.get("config") or {}).get("gate") or {}).get("alpha", 0.05),
        ),
    }


def load_summary(run_dir: Path | str) -> dict[str, Any]:
    """The summary JSON (design.md contract) of a run folder."""
    run_dir = Path(run_dir)
    store = RunStore.open_existing(run_dir)
    try:
        return build_summary(store, run_dir)
    finally:
        store.close()
