"""Ingested outcomes against a baseline window: unchanged stays OK, a drop in one length × position
bin ALERTs naming it, forbidden claims are in no sequence, a bad window is one line of bad input;
one value per conversation (or per hour block where records carry no ``cluster_id``)."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.monitor.ingest import ingest
from rotscope.monitor.record import WindowComparison
from rotscope.monitor.store import MonitorStore
from rotscope.monitor.window import parse_window, window_comparison, window_lines

START = datetime(2026, 2, 1, tzinfo=UTC)
WINDOW = "2026-02-01T00:00Z..2026-02-01T10:00Z"


def _records(
    drop_from_hour: int | None, *, forbidden_late: bool = False, conversation: int = 0, hours: int = 30
) -> list[dict[str, object]]:
    """60 records an hour; with ``conversation``, consecutive records of an hour in conversations
    of that many requests (``cluster_id`` the hash of ``h{hour}c{k}``)."""
    rng = random.Random(7)
    out: list[dict[str, object]] = []
    for hour in range(hours):
        for index in range(60):
            length = rng.choice([300, 3000])
            quantile = rng.random()
            worse = (
                drop_from_hour is not None and hour >= drop_from_hour and length == 3000 and quantile < 1 / 3
            )
            answered = rng.random() < (0.5 if worse else 0.95)
            outcome = "answered" if answered else "abstained"
            if forbidden_late and hour >= 10 and rng.random() < 0.3:
                outcome = "forbidden_claim"
            ts = START + timedelta(hours=hour, seconds=index * 59 + rng.uniform(0, 58))
            record = {"ts": ts.isoformat(timespec="milliseconds"), "length_tokens": length,
                      "evidence_quantile": round(quantile, 4), "outcome": outcome}  # fmt: skip
            if conversation:
                record["cluster_id"] = hashlib.blake2b(
                    f"h{hour}c{index // conversation}".encode(), digest_size=8
                ).hexdigest()
            out.append(record)
    return out


def _compare(tmp_path: Path, records: list[dict[str, object]], window: str = WINDOW) -> WindowComparison:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    ingest(tmp_path / "m.db", source)
    with MonitorStore.read(tmp_path / "m.db") as store:
        return window_comparison(store, window)


def test_unchanged_outcomes_stay_ok(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(None, conversation=3))
    assert found.status == "OK" and found.responsible == []
    assert found.unit == "conversation"
    bins = {entry.bin: entry for entry in found.bins}
    # every conversation but the last (its last record is the store's newest: still open) entered
    # a conversation is entered once 30 minutes pass after its last record: the last half hour's
    # (10 conversations, and the one that straddles it) wait
    assert len(bins) == 7 and bins["pooled"].records + found.waiting_records == 20 * 60
    assert found.waiting_units == 11 and found.waiting_records == 33
    assert bins["pooled"].units == 20 * 20 - 11 and bins["pooled"].window_units == 10 * 20
    assert all(entry.reference < entry.window_answered for entry in bins.values())
    text = window_lines(found)
    assert "answered rate per conversation, each conversation one value" in text[0]
    assert (
        "  11 later conversations (33 records) not entered yet: still open, or begun after one that is"
        in text
    )
    assert sum("no longer one per record" in line for line in text) == 1


def test_a_drop_in_one_bin_alerts_naming_it(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(15, conversation=3))
    assert found.status == "ALERT"
    assert set(found.responsible) - {"pooled"} == {"[2048, 4096)/0.00-0.33"}


def test_without_cluster_ids_each_hour_block_is_one_value(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(None))
    assert found.unit == "hour block" and found.status == "OK"
    pooled = next(entry for entry in found.bins if entry.bin == "pooled")
    # 20 hours after the window; the last is not over when the newest record is in it
    assert pooled.window_units == 10 and pooled.units == 19 and found.waiting_units == 1


def test_a_drop_without_cluster_ids_alerts_given_a_long_enough_window(tmp_path: Path) -> None:
    # ten hour blocks make a loose reference (the cluster t on 10 values, at alpha 0.05 / 8 / 2):
    # the drop of 0.45 in one bin is then not ruled in; forty are enough
    (tmp_path / "short").mkdir()
    assert _compare(tmp_path / "short", _records(15, hours=60)).status == "OK"
    found = _compare(tmp_path, _records(40, hours=80), "2026-02-01T00:00Z..2026-02-02T16:00Z")
    assert found.unit == "hour block" and found.status == "ALERT"
    assert set(found.responsible) - {"pooled"} == {"[2048, 4096)/0.00-0.33"}


def test_forbidden_claims_are_in_no_sequence(tmp_path: Path) -> None:
    found = _compare(tmp_path, _records(None, forbidden_late=True, conversation=3))
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
