"""The summary's cells: counts, accuracy and its interval over a group of rows, and a cell's key."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rotscope.analysis.clusters import clusters_of
from rotscope.rows import Row, error_rate, group_by, instance_means, partial_credit, scored
from rotscope.stats.intervals import mean_interval

CELL_METHOD = "adjusted t on instance means"
"""What a cell's interval is (``stats.mean_interval``), named in the summary's ``ci_method``."""

JUDGED = ("correct", "incorrect", "abstained")


def counts(rows: list[Row]) -> dict[str, int]:
    outcomes = Counter(row["outcome"] for row in scored(rows))
    return {
        "n": len(rows),
        "instances": len({row["instance_id"] for row in rows}),
        "correct": outcomes["correct"],
        "incorrect": outcomes["incorrect"],
        "abstained": outcomes["abstained"],
        "errors": sum(row["status"] == "error" for row in rows),
        "pending": sum(row["status"] == "pending" for row in rows),
        "judged": sum(row.get("judge_verdict") in JUDGED for row in scored(rows)),
    }


def mean_partial(rows: list[Row], field: str) -> float | None:
    """The mean partial credit ``field`` (``recall`` of set answers, ``similarity`` of reply
    answers, any measure a scorer registered) of the scored rows whose claim report has it;
    ``None`` where none has."""
    values = [value for row in scored(rows) if (value := partial_credit(row).get(field)) is not None]
    return sum(values) / len(values) if values else None


def mean_partials(rows: list[Row]) -> dict[str, float]:
    """``mean_<measure>`` for every partial-credit measure a scored row reports, by name."""
    names = sorted({name for row in scored(rows) for name in partial_credit(row)})
    means = {name: mean_partial(rows, name) for name in names}
    return {f"mean_{name}": value for name, value in means.items() if value is not None}


def mean_recall(rows: list[Row]) -> float | None:
    """The mean partial credit of the scored rows with a set answer (their claim report's
    ``recall``); ``None`` where no row has one."""
    return mean_partial(rows, "recall")


def by_variant(rows: list[Row]) -> dict[str, Any]:
    """``by_variant``: the cell split by haystack variant (its counts and instance accuracy in each),
    where its scored rows come from more than one known variant; else nothing."""
    done = scored(rows)
    variants = {row.get("haystack_variant") for row in done}
    if len(variants) < 2 or None in variants:
        return {}
    parts = []
    for (variant,), group in group_by(done, "haystack_variant").items():
        means = instance_means(group)
        parts.append(
            {"variant": variant, "n": len(group), "instances": len(means),
             "correct": sum(row["outcome"] == "correct" for row in group),
             "instance_accuracy": sum(means.values()) / len(means)}
        )  # fmt: skip
    return {"by_variant": parts}


def cell(key: dict[str, Any], rows: list[Row]) -> dict[str, Any]:
    """A cell of ``rows``: ``accuracy`` = correct / (n - errors) counts items; the interval is on
    instance means and centres near ``instance_accuracy``, the mean of the instance means (the two
    differ when instances have unequal numbers of scored items), clustered on the haystack variant
    where the instances share fewer variants than there are instances (``analysis/clusters.py``);
    ``ci_method`` names it, ``clusters`` counts its clusters. A cell of set answers adds
    ``mean_recall``, their partial credit (RULER's ``string_match_all`` averaged); one of reply
    answers (``coreference``) ``mean_similarity``, MRCR's similarity ratio averaged; any other
    measure a scorer registers, ``mean_<measure>``."""
    found = counts(rows)
    judged = found["n"] - found["errors"] - found["pending"]
    means = instance_means(rows)
    clusters = clusters_of(rows)
    low, high = mean_interval(means, clusters.of)
    categories = Counter(row["category"] for row in scored(rows) if row["category"])
    return {
        **key,
        **found,
        "accuracy": found["correct"] / judged if judged else None,
        "instance_accuracy": sum(means.values()) / len(means) if means else None,
        "instance_correct": sum(means.values()),
        "ci_low": low if means else None,
        "ci_high": high if means else None,
        "ci_method": clusters.label(CELL_METHOD) if means else None,
        "clusters": clusters.count,
        "cluster_on": clusters.unit,
        **by_variant(rows),
        "error_rate": error_rate(rows),
        "categories": dict(sorted(categories.items())),
        **mean_partials(rows),
    }


def cell_key(
    task: str,
    length: int,
    depth: float | None,
    position: str | None,
    filler: str | None,
    order: int | None = None,
) -> dict[str, Any]:
    """A cell's identity. Cells of a family with named layouts and filler types (reasoning) carry the
        layout's name in ``layout`` and in ``depth``, the filler type in ``filler``, and the layout's
        place in the family's order in ``layout_order``. Cells in session filler keep the grid's depth and
    carry ``filler: session``."""
    if filler is None:
        return {"task": task, "length": length, "depth": depth, "position": position}
    if order is None:  # a filler of the experiment's (session), its depths the grid's
        return {"task": task, "length": length, "depth": depth, "position": position, "filler": filler}
    return {"task": task, "length": length, "depth": position, "position": position, "layout": position,
            "filler": filler, "layout_order": order}  # fmt: skip
