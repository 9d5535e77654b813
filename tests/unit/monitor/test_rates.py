"""The monitor's rates: bins, forbidden claims apart, intervals clustered on ``cluster_id``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rotscope.monitor.ingest import ingest
from rotscope.monitor.rates import clustered_interval, length_bin, position_bin, rates
from rotscope.monitor.store import MonitorStore
from rotscope.records import RECORDS
from rotscope.stats.intervals import cluster_t_from_totals, cluster_t_interval, wilson


def test_bins() -> None:
    assert length_bin(1) == (1, "[1, 2)")
    assert length_bin(8191) == (4096, "[4096, 8192)") and length_bin(8192)[0] == 8192
    assert position_bin(0.0, 3)[0] == 0 and position_bin(0.5, 3)[0] == 1 and position_bin(1.0, 3)[0] == 2
    assert position_bin(0.79, 5) == (3, "0.60-0.80")


def test_cluster_totals_equal_the_per_instance_interval() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2, 40).astype(float)
    clusters = rng.integers(0, 9, 40)
    expected = cluster_t_interval(values, clusters, bounds=(0.0, 1.0), weight=1.0)
    labels = np.unique(clusters)
    totals = np.array([values[clusters == label].sum() for label in labels])
    sizes = np.array([(clusters == label).sum() for label in labels])
    found = cluster_t_from_totals(totals, sizes, bounds=(0.0, 1.0), weight=1.0)
    assert np.allclose(found, expected)


def test_equal_clusters_widen_the_cluster_t_by_its_leverage_only() -> None:
    totals = np.array([7.0, 8.0, 6.0, 9.0, 7.0, 8.0, 5.0, 9.0, 8.0, 7.0, 6.0, 8.0])
    sizes = np.full(12, 10.0)
    old_low, old_high = cluster_t_from_totals(totals, sizes, bounds=(0.0, 1.0), weight=1.0)
    low, high = clustered_interval(totals, sizes, confidence=0.95)
    centre = (totals.sum() + 1.0) / (sizes.sum() + 2.0)
    assert (low + high) / 2 == pytest.approx(centre) == pytest.approx((old_low + old_high) / 2)
    # the same df, the standard error times sqrt(G / (G - 1)) (each leverage 1/12) but for the
    # pseudo-clusters' term, which the leverage leaves alone
    ratio = (high - low) / (old_high - old_low)
    assert 1.0 < ratio < np.sqrt(12 / 11) + 1e-12 and ratio > 1.03


def test_one_long_conversation_leaves_few_degrees_of_freedom() -> None:
    # 99 short conversations and one as long as all of them: the rate hangs on that one
    sizes = np.append(np.full(99, 2.0), 198.0)
    totals = np.append(np.full(99, 2.0), 150.0)
    old_low, old_high = cluster_t_from_totals(totals, sizes, bounds=(0.0, 1.0), weight=1.0)
    low, high = clustered_interval(totals, sizes, confidence=0.95)
    assert high - low > 3 * (old_high - old_low)
    # vectorised over leading axes: each dataset as on its own
    stacked = clustered_interval(
        np.stack([totals, totals[::-1]]), np.stack([sizes, sizes[::-1]]), confidence=0.95
    )
    assert stacked[0][0] == pytest.approx(low) and stacked[1][1] == pytest.approx(high)


def _store(tmp_path: Path, records: list[dict[str, object]]) -> MonitorStore:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records))
    ingest(tmp_path / "m.db", source)
    return MonitorStore.read(tmp_path / "m.db")


def _record(number: int, outcome: str, **extra: object) -> dict[str, object]:
    return {
        "ts": f"2026-03-01T00:00:{number % 60:02d}.{number:06d}Z",
        "length_tokens": 1000 + number,
        "evidence_quantile": 0.1,
        "outcome": outcome,
        **extra,
    }


def test_forbidden_claims_are_counted_apart_and_rates_use_wilson(tmp_path: Path) -> None:
    records = [_record(i, "answered" if i < 6 else "abstained", language="en") for i in range(10)]
    records.append(_record(10, "forbidden_claim", language="en"))
    with _store(tmp_path, records) as store:
        record = rates(store)
    RECORDS["monitor"].validate_json(json.dumps(record.model_dump()))
    assert record.records == 11 and record.forbidden_claim == 1
    language = next(b for b in record.breakdowns if b.dimension == "language")
    (group,) = language.groups
    assert group.rated == 10 and group.forbidden_claim == 1 and group.clusters is None
    answered = group.rates["answered"]
    assert answered.rate == pytest.approx(0.6)
    assert (answered.low, answered.high) == pytest.approx(wilson(6, 10))


def test_clustered_records_widen_the_interval(tmp_path: Path) -> None:
    # Five conversations of four requests each, all alike within one: five clusters, not 20 records.
    records = [
        _record(i, "answered" if i // 4 < 3 else "abstained", cluster_id=f"{i // 4:016x}") for i in range(20)
    ]
    with _store(tmp_path, records) as store:
        record = rates(store)  # no labels: length and position only
    (group,) = record.breakdowns[1].groups  # every record in one position bin
    assert group.clusters == 5
    answered = group.rates["answered"]
    low, high = wilson(12, 20)
    assert answered.high - answered.low > high - low
    assert [b.dimension for b in record.breakdowns] == ["length", "position"]
