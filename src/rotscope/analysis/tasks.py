"""Per-task analysis of a run: effective length by both definitions, calibration at the control
length, degradation as the paired gap to it, and the position effect (or a family's own analysis)."""

from __future__ import annotations

from typing import Any

from rotscope.analysis.cells import cell
from rotscope.rows import Row, group_by, instance_means
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
from rotscope.tasks import TASKS

NOLIMA_RATIO = 0.85
RULER_THRESHOLD = 0.856


def effective_lengths(per_length: dict[int, dict[str, Any]], rows: list[Row]) -> dict[str, Any]:
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


def position_effect(task_rows: list[Row], depths: list[float]) -> list[dict[str, Any]]:
    """Per length: worst position, range, middle-vs-ends sign test, cells below the row's best.
    Benjamini-Hochberg runs over the lengths (middle vs ends) and over all cell comparisons."""
    ends = {min(depths), max(depths)}
    middle = [d for d in depths if d not in ends]
    results: list[dict[str, Any]] = []
    tests: list[tuple[int, float]] = []
    comparisons: list[tuple[int, float, float]] = []
    for (length,), rows in group_by(task_rows, "length_target").items():
        by_depth = {
            depth: instance_means(group, "case_id") for (depth,), group in group_by(rows, "depth").items()
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


def task_analysis(task: str, rows: list[Row]) -> dict[str, Any]:
    per_length = {
        length: cell({"length": length}, group)
        for (length,), group in group_by(rows, "length_target").items()
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
             "pairs": gap.pairs, "method": gap.method, "too_few": gap.too_few}
        )  # fmt: skip
    family = TASKS.find(task)
    own_analysis = family.analyse if family is not None else None
    return {
        "task": task,
        "lengths": list(per_length.values()),
        "effective_length": effective_lengths(per_length, rows),
        "calibration": {
            "length": control_length,
            "accuracy": control_cell["accuracy"],
            "ci_low": control_cell["ci_low"],
            "verdict": calibration(control_cell["accuracy"], control_cell["ci_low"]),
        },
        "degradation": degradation,
        # A family with its own analysis (reasoning: layouts that share depths) replaces the
        # depth-pooled position effect with it.
        "position_effect": []
        if own_analysis
        else position_effect(rows, sorted({row["depth"] for row in rows})),
        **(own_analysis(rows) if own_analysis else {}),
    }
