"""``rotscope monitor ingest`` and ``show`` end to end (issue 37): ingest, re-ingest without
doubles, rates in text and JSON, privacy by construction (marker strings in refused fields never
reach the store's bytes), and bad stores as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from rotscope.records import RECORDS
from tests.support.cli_helpers import assert_bad_input, invoke

MARKERS = [f"MARKER{number}zq" for number in range(12)]


def _record(number: int, outcome: str = "answered", **extra: object) -> dict[str, object]:
    return {
        "ts": f"2026-03-01T{number % 24:02d}:00:00.{number:06d}+00:00",
        "length_tokens": 2000 * (1 + number % 8),
        "evidence_quantile": (number % 10) / 10,
        "outcome": outcome,
        "language": "en" if number % 2 else "de",
        **extra,
    }


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def _files(store: Path) -> list[Path]:
    return [path for path in store.parent.iterdir() if path.name.startswith(store.name)]


def test_ingest_reingest_and_show(tmp_path: Path) -> None:
    store = tmp_path / "monitor.db"
    outcomes = ["answered", "missing_citation", "abstained", "truncation_rejected"]
    records: list[object] = [_record(i, outcomes[i % 4]) for i in range(40)]
    records.append(_record(41, "forbidden_claim", cluster_id="0123456789abcdef"))
    source = _write(tmp_path / "day1.jsonl", records)
    first = invoke("monitor", "ingest", store, source)
    assert first.exit_code == 0, first.output
    assert "41 records read, 41 new" in first.stdout
    again = invoke("monitor", "ingest", store, source)
    assert again.exit_code == 0 and "41 records read, 0 new, 41 already stored" in again.stdout
    shown = invoke("monitor", "show", store)
    assert shown.exit_code == 0, shown.output
    assert "41 records" in shown.stdout
    assert "forbidden_claim: 1 records (counted on its own, in no rate)" in shown.stdout
    assert "by length" in shown.stdout and "by position" in shown.stdout and "by language" in shown.stdout
    as_json = invoke("monitor", "show", "--json", "--position-bins", "5", "--by", "language", store)
    record = json.loads(as_json.stdout)
    RECORDS["monitor"].validate_json(as_json.stdout)
    assert record["records"] == 41 and record["forbidden_claim"] == 1
    assert [b["dimension"] for b in record["breakdowns"]] == ["length", "position", "language"]
    assert len(record["breakdowns"][1]["groups"]) == 5
    rated = sum(group["rated"] for group in record["breakdowns"][0]["groups"])
    assert rated == 40  # the forbidden claim is in no rate


def test_refused_text_never_reaches_the_store(tmp_path: Path) -> None:
    store = tmp_path / "monitor.db"
    good = [_record(i) for i in range(5)]
    marked = [
        _record(100, prompt=MARKERS[0]),
        _record(101, completion=MARKERS[1]),
        _record(102, messages=[{"role": "user", "content": MARKERS[2]}]),
        _record(103, tenant=f"{MARKERS[3]} and more"),
        _record(104, language={"text": MARKERS[4]}),
        _record(105, note="x" * 40 + MARKERS[5]),
        _record(106, **{MARKERS[6]: "x"}),
        _record(107, content=MARKERS[7]),
        _record(108, cluster_id=MARKERS[8]),
        _record(109, outcome=MARKERS[9]),
        _record(110, text=MARKERS[10]),
        _record(111, evidence_quantile=[0.5, MARKERS[11]]),
    ]
    source = _write(tmp_path / "mixed.jsonl", [*good, *marked])
    refused = invoke("monitor", "ingest", store, source)
    line = assert_bad_input(refused, "mixed.jsonl:6: field 'prompt'", "nothing of the file was stored")
    assert MARKERS[0] not in line
    skipped = invoke("monitor", "ingest", "--skip-bad", store, source)
    assert skipped.exit_code == 0, skipped.output
    assert "5 records read, 5 new" in skipped.stdout and "12 refused and skipped" in skipped.stdout
    assert not any(marker in skipped.output for marker in MARKERS)
    stored = b"".join(path.read_bytes() for path in _files(store))
    assert b"answered" in stored  # the good records are there ...
    for marker in MARKERS:  # ... and nothing of the refused ones
        assert marker.encode() not in stored, marker


def test_bad_stores_are_one_line(tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [_record(0)])
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 200)
    assert_bad_input(invoke("monitor", "show", text), "not a monitoring store")
    assert_bad_input(invoke("monitor", "ingest", text, source), "not a monitoring store")
    assert text.read_text() == "not a database\n" * 200
    assert_bad_input(invoke("monitor", "show", tmp_path / "missing.db"), "no monitoring store there")
    assert_bad_input(invoke("monitor", "ingest", tmp_path / "no" / "m.db", source), "no such folder")
    assert_bad_input(invoke("monitor", "ingest", tmp_path, source), "a folder")
    assert_bad_input(invoke("monitor", "ingest", tmp_path / "m.db", tmp_path / "none.jsonl"), "no such file")
    assert_bad_input(invoke("monitor", "show", "--position-bins", "1", tmp_path / "m.db"), "--position-bins")
