"""The summary's cells: counts, accuracy and its interval over a group of rows, and a cell's key
(``rotscope.records.cells``)."""

from __future__ import annotations

from collections import Counter

from rotscope.analysis.clusters import clusters_of
from rotscope.records.cells import Cell, CellKey, CellStats, Counts, LengthCell, VariantPart
from rotscope.rows import Row, error_rate, group_by, instance_means, partial_credit, scored, value
from rotscope.stats.intervals import mean_interval

CELL_METHOD = "adjusted t on instance means"
"""What a cell's interval is (``stats.mean_interval``), named in the summary's ``ci_method``."""

JUDGED = ("correct", "incorrect", "abstained")


def counts(rows: list[Row]) -> Counts:
    outcomes = Counter(row["outcome"] for row in scored(rows))
    return Counts(
        n=len(rows),
        instances=len({row["instance_id"] for row in rows}),
        correct=outcomes["correct"],
        incorrect=outcomes["incorrect"],
        abstained=outcomes["abstained"],
        errors=sum(row["status"] == "error" for row in rows),
        pending=sum(row["status"] == "pending" for row in rows),
        judged=sum(row.get("judge_verdict") in JUDGED for row in scored(rows)),
    )


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


def by_variant(rows: list[Row]) -> list[VariantPart] | None:
    """``by_variant``: the cell split by haystack variant (its counts and instance accuracy in each),
    where its scored rows come from more than one known variant; else ``None`` (left out)."""
    done = scored(rows)
    variants = {row.get("haystack_variant") for row in done}
    if len(variants) < 2 or None in variants:
        return None
    parts = []
    for (variant,), group in group_by(done, "haystack_variant").items():
        means = instance_means(group)
        parts.append(
            VariantPart(variant=variant, n=len(group), instances=len(means),
                        correct=sum(row["outcome"] == "correct" for row in group),
                        instance_accuracy=sum(means.values()) / len(means))
        )  # fmt: skip
    return parts


def cell_stats(rows: list[Row]) -> CellStats:
    """The statistics of ``rows``: ``accuracy`` = correct / (n - errors) counts items; the interval
    is on instance means and centres near ``instance_accuracy``, the mean of the instance means (the
    two differ when instances have unequal numbers of scored items), clustered on the haystack
    variant where the instances share fewer variants than there are instances
    (``analysis/clusters.py``); ``ci_method`` names it, ``clusters`` counts its clusters. Rows of set
    answers add ``mean_recall``, their partial credit (RULER's ``string_match_all`` averaged); of
    reply answers (``coreference``) ``mean_similarity``, MRCR's similarity ratio averaged; any other
    measure a scorer registers, ``mean_<measure>``."""
    found = counts(rows)
    judged = found.n - found.errors - (found.pending or 0)
    means = instance_means(rows)
    clusters = clusters_of(rows)
    low, high = mean_interval(means, clusters.of)
    categories = Counter(row["category"] for row in scored(rows) if row["category"])
    variants = by_variant(rows)
    # the counts, then a scorer's partial-credit measures (open keys, mean_<measure>)
    measured = {**found.model_dump(), **mean_partials(rows)}
    stats = CellStats(
        **measured,
        accuracy=sum(value(row) for row in scored(rows)) / judged if judged else None,
        instance_accuracy=sum(means.values()) / len(means) if means else None,
        instance_correct=sum(means.values()),
        ci_low=low if means else None,
        ci_high=high if means else None,
        ci_method=clusters.label(CELL_METHOD) if means else None,
        clusters=clusters.count,
        cluster_on=clusters.unit,
        error_rate=error_rate(rows),
        categories=dict(sorted(categories.items())),
    )
    # by_variant is absent, not null, where the cell has one variant (docs/records.md)
    return stats if variants is None else stats.model_copy(update={"by_variant": variants})


def cell(key: CellKey, rows: list[Row]) -> Cell:
    """A cell of the grid: ``key`` with the statistics of ``rows`` (``cell_stats``)."""
    return Cell(**key.model_dump(), **cell_stats(rows).model_dump())


def length_cell(length: int, rows: list[Row]) -> LengthCell:
    """Every probe of one length, pooled (``cell_stats``)."""
    return LengthCell(length=length, **cell_stats(rows).model_dump())


def cell_key(
    task: str,
    length: int,
    depth: float | None,
    position: str | None,
    filler: str | None,
    order: int | None = None,
) -> CellKey:
    """A cell's identity. Cells of a family with named layouts and filler types (reasoning) carry the
        layout's name in ``layout`` and in ``depth``, the filler type in ``filler``, and the layout's
        place in the family's order in ``layout_order``. Cells in session filler keep the grid's depth and
    carry ``filler: session``."""
    if filler is None:
        return CellKey(task=task, length=length, depth=depth, position=position)
    if order is None:  # a filler of the experiment's (session), its depths the grid's
        return CellKey(task=task, length=length, depth=depth, position=position, filler=filler)
    return CellKey(
        task=task,
        length=length,
        depth=position,
        position=position,
        layout=position,
        filler=filler,
        layout_order=order,
    )
