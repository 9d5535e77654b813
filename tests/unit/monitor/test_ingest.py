"""The ingest: all or nothing per file, or --skip-bad with a count; idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.monitor import ingest as ingest_module
from rotscope.monitor.ingest import ingest
from rotscope.monitor.store import MonitorStore


def _line(number: int, **extra: object) -> str:
    record = {"ts": f"2026-03-01T00:00:00.{number:06d}Z", "length_tokens": 100 + number}
    record.update({"evidence_quantile": 0.5, "outcome": "answered", **extra})
    return json.dumps(record) + "\n"


def test_a_bad_record_refuses_the_whole_file_even_past_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_module, "BATCH", 3)
    store = tmp_path / "m.db"
    first = tmp_path / "first.jsonl"
    first.write_text("".join(_line(i) for i in range(4)))
    assert ingest(store, first).added == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(_line(i) for i in range(10)) + _line(99, content="x") + _line(100))
    with pytest.raises(BadInput, match=r"bad.jsonl:11: field 'content'.*nothing of the file was stored"):
        ingest(store, bad)
    with MonitorStore.read(store) as opened:
        assert opened.count() == 4  # the batches of the refused file withdrawn, the first file's kept


def test_skip_bad_counts_and_names_the_refused(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(_line(0) + "{not json\n" + _line(1, prompt="x") + "\n" + _line(2))
    warnings: list[str] = []
    result = ingest(tmp_path / "m.db", source, skip_bad=True, warn=warnings.append)
    assert (result.records, result.added, result.refused) == (2, 2, 2)
    assert warnings[0].startswith(f"{source}:2: not valid JSON")
    assert warnings[1].startswith(f"{source}:3: field 'prompt'")
    assert ingest(tmp_path / "m.db", source, skip_bad=True).added == 0
