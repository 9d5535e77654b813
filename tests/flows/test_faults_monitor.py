"""Issue 52's fault battery for ``rotscope monitor`` and ``rotscope canary``: text smuggled into
every field of an outcome record (none of it readable from the store), hostile numbers, huge,
special and deeply nested files, kills during an ingest at several points, two ingests making one
store at once, the canary's loop limits and ``show --by`` typos. Every case: no traceback, exit 0
or one line with exit 2, nothing outside the store touched, nothing of a refused file kept."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.monitor import ingest as ingest_module
from tests.support.cli_helpers import assert_bad_input, invoke
from tests.support.fault_battery import (
    assert_no_traceback,
    assert_text_absent,
    bystander,
    tree_digest,
)

pytestmark = pytest.mark.fault_battery

SECRET = "hunter2SECRETMARK"
B64 = "cHcgaHVudGVyMiBTRUNSRVRNQVJL"  # base64url of "pw hunter2 SECRETMARK"


def _record(number: int, **extra: object) -> dict[str, object]:
    return {
        "ts": f"2026-03-01T{number % 24:02d}:00:00.{number:06d}+00:00",
        "length_tokens": 1000 + number,
        "evidence_quantile": (number % 10) / 10,
        "outcome": "answered",
        "language": "en",
        **extra,
    }


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def _state(store: Path) -> dict[str, list[Any]]:
    """What a reader gets back from the store: every row of every table, sorted (the bytes may
    differ after a checkpoint; the content may not)."""
    if not store.exists():
        return {}
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(map(repr, db.execute(f'SELECT * FROM "{table}"'))) for table in tables}


@pytest.fixture
def area(tmp_path: Path) -> tuple[Path, Path]:
    """A working folder and a bystander beside it."""
    work = tmp_path / "work"
    work.mkdir()
    return work, bystander(tmp_path / "bystander")


# --- text smuggled into a record: refused, or stored only as a keyed hash ----------------------

LABELS = {"dimensions": {"topic": ["billing", "support"], "tenant": ["t1", "t2"]}}

SMUGGLED: dict[str, tuple[dict[str, object], tuple[str, ...], tuple[str, ...]]] = {
    # id: (extra fields, extra ingest options, planted strings); exit 2 unless --hash-labels
    "base64-note-undeclared": ({"note": B64}, (), (B64,)),
    "base64-note-hashed-still-undeclared": ({"note": B64}, ("--hash-labels",), (B64,)),
    "topic-patient-text-undeclared-value": ({"topic": "patient_has_HIV_positive"}, (), ("patient_has_HIV",)),
    "topic-patient-text-hashed": (
        {"topic": "patient_has_HIV_positive"},
        ("--hash-labels",),
        ("patient_has_HIV",),
    ),
    "extra-dimension-name": ({"pw_is_hunter2_x": "1"}, (), ("pw_is_hunter2",)),
    "extra-dimension-name-hashed": ({"pw_is_hunter2_x": "t1"}, ("--hash-labels",), ("pw_is_hunter2",)),
    "language-not-iso": ({"language": SECRET}, (), (SECRET,)),
    "language-hashed": ({"language": SECRET}, ("--hash-labels",), (SECRET,)),
    "risk-text": ({"risk": "patient_HIV_high"}, (), ("patient_HIV",)),
    "model-digest-text": ({"model_digest": SECRET}, (), (SECRET,)),
    "template-digest-hashed": ({"template_digest": SECRET}, ("--hash-labels",), (SECRET,)),
    "tenant-declared-dimension-other-value": ({"tenant": SECRET}, (), (SECRET,)),
    "prompt-field": ({"prompt": f"my password is {SECRET}"}, (), (SECRET,)),
    "nested-label": ({"topic": {"text": SECRET}}, (), (SECRET,)),
    "field-name-is-text": ({f"x{SECRET.lower()}": "1"}, (), (SECRET.lower(),)),
    "outcome-text": ({"outcome": SECRET}, (), (SECRET,)),
    "ts-text": ({"ts": SECRET}, (), (SECRET,)),
    "quantile-list-text": ({"evidence_quantile": [0.5, SECRET]}, (), (SECRET,)),
    "cluster-not-hex": ({"cluster_id": SECRET}, (), (SECRET,)),
}


@pytest.mark.parametrize("case", sorted(SMUGGLED))
def test_smuggled_text_never_lands(case: str, area: tuple[Path, Path]) -> None:
    work, outside = area
    extra, options, planted = SMUGGLED[case]
    before = tree_digest(outside)
    config = work / "labels.yaml"
    config.write_text(yaml.safe_dump(LABELS), encoding="utf-8")
    store = work / "monitor.db"
    assert invoke("monitor", "ingest", store, _write(work / "good.jsonl", [_record(0)])).exit_code == 0
    source = _write(work / "day.jsonl", [_record(1), _record(2, **extra), _record(3)])
    result = invoke("monitor", "ingest", "--labels", config, *options, store, source)
    assert_no_traceback(result)
    hashed = "--hash-labels" in options and "name" not in case and "undeclared" not in case
    assert result.exit_code == (0 if hashed else 2), result.output
    if result.exit_code == 2:
        assert "day.jsonl:2:" in result.stderr and "nothing of the file was stored" in result.stderr
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 1
    else:
        assert "3 records read, 3 new" in result.stdout
    for needle in planted:
        assert needle.lower() not in result.output.lower()
    assert_text_absent(store, *planted)
    assert tree_digest(outside) == before


def test_a_hex_encoded_text_cluster_id_is_rehashed(area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    encoded = f"pw {SECRET}".encode().hex()  # valid lower-case hex, 40 digits: text by another name
    store = work / "monitor.db"
    source = _write(work / "day.jsonl", [_record(0, cluster_id=encoded), _record(1, cluster_id=encoded)])
    result = invoke("monitor", "ingest", store, source)
    assert_no_traceback(result)
    assert result.exit_code == 0
    with sqlite3.connect(store) as db:
        stored = {row[0] for row in db.execute("SELECT cluster_id FROM outcomes")}
    assert len(stored) == 1 and len(next(iter(stored))) == 32  # one conversation still, re-keyed
    assert_text_absent(store, encoded, SECRET, encoded[:20])
    assert tree_digest(outside) == before


def test_the_source_files_name_is_not_stored_unless_asked(area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    store = work / "monitor.db"
    source = _write(work / f"patient_{SECRET}.jsonl", [_record(0)])
    result = invoke("monitor", "ingest", store, source)
    assert_no_traceback(result)
    assert result.exit_code == 0
    assert_text_absent(store, SECRET)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT source FROM ingests").fetchone()[0].startswith("sha256:")
    asked = invoke("monitor", "ingest", "--record-source-name", store, source)
    assert asked.exit_code == 0
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT source FROM ingests ORDER BY id DESC").fetchone()[0] == source.name
    assert tree_digest(outside) == before


def test_skip_bad_keeps_the_good_and_none_of_the_planted(area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    store = work / "monitor.db"
    records = [_record(number, **extra) for number, (extra, _o, _p) in enumerate(SMUGGLED.values())]
    records += [_record(100 + number) for number in range(5)]
    result = invoke("monitor", "ingest", "--skip-bad", store, _write(work / "mixed.jsonl", records))
    assert_no_traceback(result)
    assert result.exit_code == 0 and f"5 records read, 5 new, 0 already stored, {len(SMUGGLED)} refused" in (
        result.stdout
    )
    assert_text_absent(store, *(needle for _e, _o, planted in SMUGGLED.values() for needle in planted))
    assert tree_digest(outside) == before


# --- hostile numbers: the last of many good records refuses the file, naming its line -----------

HOSTILE: dict[str, dict[str, object]] = {
    "length-2**70": {"length_tokens": 2**70},
    "length-1e20": {"length_tokens": 1e20},
    "length-negative": {"length_tokens": -5},
    "length-zero": {"length_tokens": 0},
    "length-bool": {"length_tokens": True},
    "length-string": {"length_tokens": "1000"},
    "ts-year-1": {"ts": "0001-01-01T00:00:00+01:00"},
    "ts-year-9999": {"ts": "9999-12-31T23:59:59-01:00"},
    "ts-no-zone": {"ts": "2026-03-01T00:00:00"},
    "ts-month-13": {"ts": "2026-13-01T00:00:00Z"},
    "quantile-above-one": {"evidence_quantile": 1.5},
    "quantile-huge": {"evidence_quantile": 1e308},
    "quantile-too-many-pieces": {"evidence_quantile": [0.5] * 65},
    "evidence-count-2**63": {"evidence_count": 2**63},
    "hops-zero": {"hops": 0},
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("existing", [False, True], ids=["new-store", "existing-store"])
def test_hostile_numbers_refuse_the_file(
    case: str, existing: bool, area: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_module, "BATCH", 10)  # the bad record comes several batches in
    work, outside = area
    before_outside = tree_digest(outside)
    store = work / "monitor.db"
    if existing:
        assert invoke("monitor", "ingest", store, _write(work / "old.jsonl", [_record(500)])).exit_code == 0
    before = _state(store)
    source = _write(work / "day.jsonl", [*(_record(n) for n in range(35)), _record(99, **HOSTILE[case])])
    assert_bad_input(invoke("monitor", "ingest", store, source), "day.jsonl:36:", "nothing of the file")
    assert _state(store) == before  # nothing of the refused file, no store where there was none
    assert store.exists() == existing
    assert tree_digest(outside) == before_outside


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1" * 5000])
def test_non_finite_and_giant_literals_are_one_line(literal: str, area: tuple[Path, Path]) -> None:
    work, _outside = area
    line = json.dumps(_record(0)).replace('"evidence_quantile": 0.0', f'"evidence_quantile": {literal}')
    source = work / "day.jsonl"
    source.write_text(json.dumps(_record(1)) + "\n" + line + "\n", encoding="utf-8")
    assert_bad_input(invoke("monitor", "ingest", work / "m.db", source), "day.jsonl:2:")
    assert not (work / "m.db").exists()


# --- huge, special and deep files -------------------------------------------------------------


def _special(work: Path, kind: str) -> Path:
    path = work / f"{kind}.jsonl"
    if kind == "symlink-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling-symlink":
        path.symlink_to(work / "nowhere")
    return path


@pytest.mark.parametrize("kind", ["symlink-dev-zero", "fifo", "folder", "dangling-symlink"])
def test_special_files_are_refused_before_a_read(kind: str, area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    result = invoke("monitor", "ingest", work / "m.db", _special(work, kind))
    assert_bad_input(result, kind)
    assert not (work / "m.db").exists()
    assert tree_digest(outside) == before


def test_dev_null_itself_is_refused(area: tuple[Path, Path]) -> None:
    work, _outside = area
    assert_bad_input(invoke("monitor", "ingest", work / "m.db", "/dev/null"), "not a regular file")


BAD_FILES: dict[str, bytes] = {
    "100k-nested-brackets": b"[" * 100_000 + b"\n",
    "30k-nested-brackets": b"[" * 30_000 + b"]" * 30_000 + b"\n",
    "30k-nested-objects": b'{"a":' * 30_000 + b"1" + b"}" * 30_000 + b"\n",
    "one-megabyte-line-no-newline": b'{"ts": "' + b"x" * 1_000_000,
    "invalid-utf8": b'{"ts": "\xff\xfe", "length_tokens": 1}\n',
    "nul-bytes": b"\x00" * 100 + b"\n",
    "utf16": json.dumps(_record(0)).encode("utf-16") + b"\n",
    "a-list-not-an-object": b"[1, 2, 3]\n",
    "truncated-json": json.dumps(_record(0)).encode()[:-5] + b"\n",
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_are_one_line_naming_the_line(case: str, area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    source = work / "day.jsonl"
    source.write_bytes(json.dumps(_record(0)).encode() + b"\n" + BAD_FILES[case])
    assert_bad_input(invoke("monitor", "ingest", work / "m.db", source), "day.jsonl:2:")
    assert not (work / "m.db").exists()
    skipped = invoke("monitor", "ingest", "--skip-bad", work / "m.db", source)
    assert_no_traceback(skipped)
    assert skipped.exit_code == 0 and "1 records read, 1 new" in skipped.stdout
    assert tree_digest(outside) == before


def test_a_long_line_is_skipped_whole_with_skip_bad(area: tuple[Path, Path]) -> None:
    work, _outside = area
    source = work / "day.jsonl"
    long = b'{"note": "' + b"y" * 200_000 + b'"}\n'
    source.write_bytes(long + json.dumps(_record(0)).encode() + b"\n")
    result = invoke("monitor", "ingest", "--skip-bad", work / "m.db", source)
    assert_no_traceback(result)
    assert "1 records read, 1 new, 0 already stored, 1 refused" in result.stdout
    assert "day.jsonl:1: a line longer than 64 KiB" in result.stderr


def test_crlf_and_blank_lines_are_fine(area: tuple[Path, Path]) -> None:
    work, _outside = area
    source = work / "day.jsonl"
    source.write_bytes(b"\r\n".join(json.dumps(_record(n)).encode() for n in range(3)) + b"\r\n\r\n")
    result = invoke("monitor", "ingest", work / "m.db", source)
    assert_no_traceback(result)
    assert "3 records read, 3 new" in result.stdout


# --- label vocabularies: the config file itself is checked -----------------------------------

BAD_CONFIGS: dict[str, str] = {
    "value-with-spaces": "dimensions: {topic: ['patient has HIV']}\n",
    "text-field-as-dimension": "dimensions: {prompt: [a]}\n",
    "too-many-values": "dimensions: {topic: [" + ", ".join(f"v{n}" for n in range(257)) + "]}\n",
    "too-many-dimensions": "dimensions: {" + ", ".join(f"d{n}: [a]" for n in range(17)) + "}\n",
    "unknown-key": "dimensions: {topic: [a]}\nsalt: abc\n",
    "not-yaml": "dimensions: [\n",
    "upper-case-name": "dimensions: {Topic: [a]}\n",
    "empty-values": "dimensions: {topic: []}\n",
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_label_configs_are_one_line(case: str, area: tuple[Path, Path]) -> None:
    work, _outside = area
    config = work / "labels.yaml"
    config.write_text(BAD_CONFIGS[case], encoding="utf-8")
    source = _write(work / "day.jsonl", [_record(0)])
    assert_bad_input(invoke("monitor", "ingest", "--labels", config, work / "m.db", source), "--labels")
    assert not (work / "m.db").exists()


def test_a_declared_vocabulary_is_kept_and_extended(area: tuple[Path, Path]) -> None:
    work, _outside = area
    store = work / "m.db"
    first, second = work / "a.yaml", work / "b.yaml"
    first.write_text("dimensions: {topic: [billing]}\n", encoding="utf-8")
    second.write_text("dimensions: {topic: [support]}\n", encoding="utf-8")
    day1 = _write(work / "d1.jsonl", [_record(0, topic="billing")])
    day2 = _write(work / "d2.jsonl", [_record(1, topic="billing"), _record(2, topic="support")])
    assert invoke("monitor", "ingest", "--labels", first, store, day1).exit_code == 0
    assert_bad_input(invoke("monitor", "ingest", store, day2), "d2.jsonl:2: field 'topic'")
    assert invoke("monitor", "ingest", "--labels", second, store, day2).exit_code == 0
    again = invoke("monitor", "ingest", store, day2)  # the stored vocabulary holds both now
    assert again.exit_code == 0 and "2 records read, 0 new" in again.stdout


# --- kills during an ingest, and two ingests making one store ---------------------------------

_INGEST = [sys.executable, "-c", "from rotscope.cli import app; app()", "monitor", "ingest"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, float]:
    """A file of 20,000 records and how long one uninterrupted ingest of it takes in a process."""
    folder = tmp_path_factory.mktemp("big")
    count = 20_000
    source = _write(folder / "big.jsonl", [_record(n, cluster_id=f"{n:016x}") for n in range(count)])
    started = time.monotonic()
    whole = subprocess.run([*_INGEST, str(folder / "probe.db"), str(source)], env=_env(), capture_output=True)
    assert whole.returncode == 0, whole.stderr
    return source, count, time.monotonic() - started


@pytest.mark.parametrize("fraction", [0.15, 0.4, 0.65, 0.85, 0.97])
def test_a_kill_during_an_ingest_leaves_the_store_as_it_was(
    fraction: float, big: tuple[Path, int, float], area: tuple[Path, Path]
) -> None:
    work, outside = area
    before_outside = tree_digest(outside)
    source, count, duration = big
    store = work / "m.db"
    assert invoke("monitor", "ingest", store, _write(work / "old.jsonl", [_record(10**6)])).exit_code == 0
    before = _state(store)
    process = subprocess.Popen([*_INGEST, str(store), str(source)], env=_env(), stderr=subprocess.PIPE)
    time.sleep(duration * fraction)
    finished = process.poll() is not None
    process.kill()
    process.wait()
    after = _state(store)
    if after != before:  # the kill came after the commit (the process was ending): then it is whole
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM outcomes").fetchone()[0] == count + 1
            assert db.execute("SELECT count(*) FROM ingests WHERE finished_at IS NULL").fetchone()[0] == 0
    else:
        assert not finished
    again = invoke("monitor", "ingest", store, source)
    assert_no_traceback(again)
    assert again.exit_code == 0 and f"{count} records read" in again.stdout
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM outcomes").fetchone()[0] == count + 1
    assert not [path for path in work.iterdir() if ".creating-" in path.name]
    assert tree_digest(outside) == before_outside


@pytest.mark.parametrize("round_", range(3))
def test_two_ingests_making_one_store_at_once(round_: int, area: tuple[Path, Path]) -> None:
    work, _outside = area
    store = work / "m.db"
    first = _write(work / "a.jsonl", [_record(n) for n in range(300)])
    second = _write(work / "b.jsonl", [_record(n) for n in range(300, 600)])
    processes = [
        subprocess.Popen([*_INGEST, str(store), str(source)], env=_env(), stderr=subprocess.PIPE, text=True)
        for source in (first, second)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    for process, (_out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert "Traceback" not in err and "no tables" not in err
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 600


def test_an_old_store_is_migrated_its_rows_as_they_were(area: tuple[Path, Path]) -> None:
    from rotscope.monitor.store import MIGRATIONS

    work, _outside = area
    store = work / "old.db"
    with sqlite3.connect(store) as db:
        for number, (_name, script) in enumerate(MIGRATIONS[:2], start=1):
            db.executescript(f"{script};\nPRAGMA user_version = {number};")
        db.execute(
            "INSERT INTO outcomes VALUES (x'00', '2026-01-01T00:00:00+00:00', 1.0, 100, '[0.5]', 0.5, "
            "'answered', 'en', NULL, NULL, NULL, NULL, NULL, '0123456789abcdef', '{}', 0)"
        )
    result = invoke(
        "monitor", "ingest", store, _write(work / "d.jsonl", [_record(0, cluster_id="0123456789abcdef")])
    )
    assert_no_traceback(result)
    with sqlite3.connect(store) as db:
        clusters = sorted(row[0] for row in db.execute("SELECT cluster_id FROM outcomes"))
        assert len(db.execute("SELECT value FROM meta WHERE key = 'salt'").fetchone()[0]) == 64
    assert "0123456789abcdef" in clusters and len(clusters) == 2  # the old row as it was, the new re-keyed


# --- the canary's limits, and show's --by ------------------------------------------------------

CANARY_LIMITS: dict[str, tuple[tuple[str, ...], str]] = {
    "calls-a-trillion": (("--calls", "1000000000000"), "--calls"),
    "calls-zero": (("--calls", "0"), "--calls"),
    "calls-negative": (("--calls", "-3"), "--calls"),
    "every-zero": (("--every", "0s"), "--every"),
    "every-too-long": (("--every", "400d"), "--every"),
    "every-not-an-interval": (("--every", "soon"), "--every"),
    "every-too-short": (("--every", "0.001s"), "--every"),
    "max-checks-without-every": (("--max-checks", "3"), "--max-checks"),
    "max-checks-zero": (("--every", "1s", "--max-checks", "0"), "--max-checks"),
    "max-checks-ten-million": (("--every", "1s", "--max-checks", "10000000"), "--max-checks"),
}


@pytest.mark.parametrize("case", sorted(CANARY_LIMITS))
def test_canary_limits_are_refused_leaving_no_store(case: str, area: tuple[Path, Path]) -> None:
    work, outside = area
    before = tree_digest(outside)
    config = work / "exp.yaml"
    config.write_text(
        yaml.safe_dump({"name": "e", "model": "fake/lexical", "tasks": ["niah"]}), encoding="utf-8"
    )
    options, fragment = CANARY_LIMITS[case]
    result = invoke("canary", config, "--baseline", work / "base", "--out", work / "store.db", *options)
    assert_bad_input(result, fragment)
    assert list(work.iterdir()) == [config]  # no store, no half-made one
    assert tree_digest(outside) == before


@pytest.mark.parametrize("name", ["unknown", "tenant\x1b[2J", "hops"])
def test_show_by_a_dimension_no_record_has_is_refused(name: str, area: tuple[Path, Path]) -> None:
    work, _outside = area
    store = work / "m.db"
    assert invoke("monitor", "ingest", store, _write(work / "d.jsonl", [_record(0)])).exit_code == 0
    line = assert_bad_input(invoke("monitor", "show", "--by", name, store), "--by", "no record")
    assert "\x1b" not in line
    assert invoke("monitor", "show", "--by", "language", store).exit_code == 0
