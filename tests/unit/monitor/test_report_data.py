"""What monitor report assembles: a canary bin's ingest bin, the time bucket chosen from the span,
every rated record in one point and forbidden claims apart, only finished checks, the alerts from
the stored bodies, and no ingest comparison where nothing was ingested before the canary."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rotscope.monitor.canary import store as canary_store
from rotscope.monitor.canary.alert import alert_body
from rotscope.monitor.ingest import ingest
from rotscope.monitor.report_data import ingest_bin, report_data
from rotscope.monitor.sequential import Margins, sequential_test
from rotscope.monitor.store import MonitorStore

START = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_canary_bin_lies_in_the_ingest_bin_of_its_lengths() -> None:
    assert ingest_bin("1600/0.00-0.33") == "[1024, 2048)/0.00-0.33"
    assert ingest_bin("(1024, 2047]/0.67-1.00") == "[1024, 2048)/0.67-1.00"
    assert ingest_bin("(1024, 2048]/0.67-1.00") is None  # 2048 is the next bin's
    assert ingest_bin("(0, 100]/0.00-0.33") is None
    assert ingest_bin("(4096, inf)/0.00-0.33") is None


def _ingest(store: Path, tmp_path: Path, hours: int, *, clustered: bool = False) -> int:
    lines = []
    for hour in range(hours):
        for minute, outcome in enumerate(["answered", "answered", "abstained", "forbidden_claim"]):
            ts = (START + timedelta(hours=hour, minutes=minute)).isoformat()
            record = {"ts": ts, "length_tokens": 700, "evidence_quantile": 0.5, "outcome": outcome}
            if clustered:
                record["cluster_id"] = f"{hour:016x}"  # the hour's requests: one conversation
            lines.append(json.dumps(record))
    (tmp_path / "o.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ingest(store, tmp_path / "o.jsonl").added


def test_rates_are_by_hour_up_to_three_days_by_day_beyond_and_claims_apart(tmp_path: Path) -> None:
    for hours, unit, buckets in ((48, "hour", 48), (96, "day", 4)):
        path = tmp_path / f"{hours}.db"
        added = _ingest(path, tmp_path, hours)
        with MonitorStore.read(path) as store:
            data = report_data(store)
        assert data.canaries == []
        ingest_part = data.ingest
        assert ingest_part.unit == unit and ingest_part.records == added
        [series] = ingest_part.series
        assert series.bin == "[512, 1024)/0.33-0.67" and len(series.points) == buckets
        assert sum(point.rated for point in series.points) == 3 * hours  # claims in no rate
        assert all(abs(point.answered - 2 / 3) < 1e-9 for point in series.points)
        assert all(point.low < 2 / 3 < point.high for point in series.points)
        assert ingest_part.forbidden_total == hours
        assert all(point.clusters is None for point in series.points)  # Wilson on records


def test_records_of_one_conversation_count_as_one_cluster(tmp_path: Path) -> None:
    _ingest(tmp_path / "c.db", tmp_path, 96, clustered=True)
    with MonitorStore.read(tmp_path / "c.db") as store:
        [series] = report_data(store).ingest.series
    assert [point.clusters for point in series.points] == [24] * 4  # a day's 24 conversations
    assert all(point.low < 2 / 3 < point.high for point in series.points)


def test_only_finished_checks_and_their_stored_alerts(tmp_path: Path) -> None:
    bins = ["200/0.00-0.33", "1600/0.00-0.33"]
    margins = Margins()
    with MonitorStore.create(tmp_path / "c.db") as store:
        canary = canary_store.open_canary(store, "base|prod", "base", "prod", {"bins": bins})
        for number in (1, 2, 3):
            canary_store.start_check(store, canary, number)
            for slot in range(20):
                name = bins[slot % 2]
                score = 0.0 if name == bins[1] and slot % 4 != 1 else 1.0  # the long bin falls
                probe = canary_store.ProbeRecord(slot, name, f"i{slot}", 1.0, score, None, None, None)
                canary_store.add_probe(store, canary, number, probe)
            if number == 3:
                break  # killed before its verdict: not in the report
            verdict = sequential_test(canary_store.scored_probes(store, canary, number), bins, margins)
            body = alert_body(
                verdict, check=number, at=f"2026-03-0{number}T00:00:00+00:00", subject="prod",
                baseline="base", margins=margins, probes=20, errors=0,
            )  # fmt: skip
            canary_store.finish_check(store, canary, number, verdict.status, body)
        data = report_data(store)
    [report] = data.canaries
    assert [check.check for check in report.checks] == [1, 2]
    assert data.ingest is None and report.disagreement is None
    assert [series.bin for series in report.series] == [*bins, "pooled"]
    long = report.series[1].points
    assert [point.check for point in long] == [1, 2] and long[1].drop_lower > margins.fail
    assert report.alerts[-1].status == "ALERT" and bins[1] in report.alerts[-1].responsible
    assert all(bins[0] not in alert.responsible for alert in report.alerts)
