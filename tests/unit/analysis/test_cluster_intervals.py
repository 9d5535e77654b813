"""The analysis's intervals are the ones ``benchmarks/cluster_coverage.py`` measures: a cell, a
per-length line and the paired gap of rows whose cases share haystack variants are
``stats.cluster_t_interval`` clustered on the variant (on the instance where variants are as many
as instances, unknown or one), and every interval names its method."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rotscope.analysis.cells import cell_stats
from rotscope.analysis.clusters import clusters_of
from rotscope.analysis.tasks import task_analysis
from rotscope.rows import Row
from rotscope.stats.intervals import CELL_PSEUDO_WEIGHT, cluster_t_interval, mean_interval, wilson
from rotscope.stats.paired import paired_gap

LENGTHS = (256, 1024)
DEPTHS = (0.0, 0.5, 1.0)


def rows_of(correct: np.ndarray, variants: list[int | None]) -> list[Row]:
    """Rows of a niah run from ``correct`` (length, instance, depth, item) and each instance's variant."""
    rows: list[dict[str, Any]] = []
    for li, length in enumerate(LENGTHS):
        for i, variant in enumerate(variants):
            for di, depth in enumerate(DEPTHS):
                for trial in range(correct.shape[-1]):
                    rows.append(
                        {"task": "niah", "case_id": f"c{i}", "instance_id": f"c{i}", "length_target": length,
                         "depth": depth, "position": None, "filler": None, "trial": trial, "status": "ok",
                         "outcome": "correct" if correct[li, i, di, trial] else "incorrect",
                         "category": None, "judge_verdict": None, "claim_report": None,
                         "haystack_variant": variant, "control": 0}
                    )  # fmt: skip
    return rows  # type: ignore[return-value]


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(31)
    return rng.random((2, 12, len(DEPTHS), 3)) < np.array([0.9, 0.6])[:, None, None, None]


def test_a_cell_is_clustered_on_three_variants(data: np.ndarray) -> None:
    variants = [i % 3 for i in range(12)]
    rows = rows_of(data, variants)
    found = cell_stats([row for row in rows if row["length_target"] == 256 and row["depth"] == 0.0])
    values = data[0, :, 0, :].mean(axis=-1)
    low, high = cluster_t_interval(values, variants, bounds=(0.0, 1.0), weight=CELL_PSEUDO_WEIGHT)
    assert (found.ci_low, found.ci_high) == pytest.approx((float(low), float(high)))
    assert found.ci_method == "adjusted t on instance means, clustered on 3 haystack variants"
    assert (found.clusters, found.cluster_on) == (3, "variant")
    # clustering widens it past the instance-level interval, which treats the 12 cases as independent
    unclustered = mean_interval({f"c{i}": v for i, v in enumerate(values)})
    assert found.ci_high - found.ci_low > unclustered[1] - unclustered[0]
    split = found.by_variant
    assert [part.variant for part in split] == [0, 1, 2]
    assert sum(part.n for part in split) == found.n


def test_the_per_length_line_and_the_gap_use_the_same_clusters(data: np.ndarray) -> None:
    variants = [i % 3 for i in range(12)]
    analysis = task_analysis("niah", rows_of(data, variants))
    line = next(entry for entry in analysis.lengths if entry.length == 1024)
    values = data[1].mean(axis=(-1, -2))
    low, high = cluster_t_interval(values, variants, bounds=(0.0, 1.0), weight=CELL_PSEUDO_WEIGHT)
    assert (line.ci_low, line.ci_high) == pytest.approx((float(low), float(high)))
    (gap,) = analysis.degradation
    differences = data[1].mean(axis=(-1, -2)) - data[0].mean(axis=(-1, -2))
    low, high = cluster_t_interval(differences, variants, bounds=(-1.0, 1.0))
    assert (gap.ci_low, gap.ci_high) == pytest.approx((float(low), float(high)))
    assert gap.gap == pytest.approx(float(differences.mean()))
    assert (gap.clusters, gap.cluster_on) == (3, "variant")
    assert gap.method == "adjusted t on paired instance differences, clustered on 3 haystack variants"


@pytest.mark.parametrize(
    ("variants", "note"),
    [
        (list(range(12)), None),
        ([None] * 12, "no haystack variant recorded"),
        ([0] * 12, "one haystack: conditional on it"),
    ],
)
def test_instances_are_the_clusters_where_variants_do_not_group_them(
    data: np.ndarray, variants: list[int | None], note: str | None
) -> None:
    rows = [row for row in rows_of(data, variants) if row["length_target"] == 256]
    clusters = clusters_of(rows)
    assert (clusters.unit, clusters.count, clusters.note) == ("instance", 12, note)
    found = cell_stats(rows)
    values = data[0].mean(axis=(-1, -2))
    low, high = cluster_t_interval(values, np.arange(12), bounds=(0.0, 1.0), weight=CELL_PSEUDO_WEIGHT)
    assert (found.ci_low, found.ci_high) == pytest.approx((float(low), float(high)))
    assert "by_variant" not in found or len({v for v in variants}) > 1


def test_paired_gap_keyed_alone_is_unchanged_and_takes_clusters() -> None:
    short = {f"c{i}": 1.0 for i in range(10)}
    long = {f"c{i}": float((i // 2) % 2) for i in range(10)}  # the two of a cluster alike
    alone = paired_gap(short, long)
    assert (alone.method, alone.clusters) == ("adjusted t", 10)
    grouped = paired_gap(short, long, clusters={f"c{i}": i // 2 for i in range(10)})
    assert grouped.estimate == alone.estimate == -0.6
    assert grouped.clusters == 5 and grouped.method == "cluster adjusted t"
    assert grouped.low is not None and alone.low is not None and grouped.high is not None
    assert grouped.low < alone.low and grouped.high > alone.high  # 5 clusters, not 10 pairs


def test_a_cell_interval_at_the_ceiling_is_never_a_point_and_wilson_stays() -> None:
    low, high = mean_interval({f"c{i}": 1.0 for i in range(16)})
    assert high == 1.0 and 0.7 < low < 1.0
    assert wilson(16, 16)[1] == 1.0  # the public function keeps its meaning
