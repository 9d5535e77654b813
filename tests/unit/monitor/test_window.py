"""Ingested outcomes against a baseline window: unchanged stays OK, a drop in one length × position
bin ALERTs naming it, forbidden claims are in no sequence, a bad window is one line of bad input."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.monitor.ingest import ingest
from rotscope.monitor.record import WindowComparison
from rotscope.monitor.store import MonitorStore
from rotscope.monitor.window import parse_window, window_comparison

START = datetime(2026, 2, 1, tzinfo=UTC)
WINDOW = "2026-02-01T00:00Z..2026-02-01T10:00Z"


def _records(drop_from_hour: int | None, *, forbidden_late: bool = False) -> list[dict[str, object]]:
    rng = random.Random(7)
    out: list[dict[str, object]] = []
    for hour in range(30):
        for _ in range(60):
            length = rng.choice([300, 3000])
            quantile = rng.random()
            worse = (
                drop_from_hour is not None and hour >= drop_from_hour and length == 3000 and quantile < 1 / 3
            )
            answered = rng.random() < (0.5 if worse else 0.95)
            outcome = "answered" if answered else "abstained"
            if forbidden_late and hour >= 10 and rng.random() < 0.3:
                outcome = "forbidden_claim"
            ts = START + timedelta(hours=hour, seconds=rng.uniform(0, 3599))
            out.append(
                {"ts": ts.isoformat(timespec="milliseconds"), "length_tokens": length,
                 "evidence_quantile": round(quantile, 4), "outcome": outcome}
            )  # fmt: skip
    return out


def _compare(tmp_path: Path, records: list[dict[str, object]]) -> WindowComparison:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    ingest(tmp_path / "m.db", source)
    with MonitorStore.read(tmp_path / "m.db") as store:
        return window_comparison(store, WINDOW)


def test_unchanged_outcomes_stay_ok(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(None))
    assert found.status == "OK" and found.responsible == []
    bins = {entry.bin: entry for entry in found.bins}
    assert len(bins) == 7 and bins["pooled"].records == 20 * 60
    assert all(entry.reference < entry.window_answered for entry in bins.values())


def test_a_drop_in_one_bin_alerts_naming_it(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(15))
    assert found.status == "ALERT"
    assert set(found.responsible) - {"pooled"} == {"[2048, 4096)/0.00-0.33"}


def test_forbidden_claims_are_in_no_sequence(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(None, forbidden_late=True))
    assert found.status == "OK"  # a forbidden claim is reported apart, never as an unanswered one
    pooled = next(entry for entry in found.bins if entry.bin == "pooled")
    assert pooled.records < 20 * 60 * 0.8


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("2026-02-01", "FROM..TO"), ("x..2026-02-02", "FROM 'x'"), ("2026-02-02..2026-02-01", "ends before")],
)
def test_a_bad_window_is_bad_input(value: str, fragment: str) -> None:
    with pytest.raises(BadInput, match=fragment):
        parse_window(value)
    assert parse_window("2026-02-01..2026-02-02")[1] - parse_window("2026-02-01..2026-02-02")[0] == 86400
