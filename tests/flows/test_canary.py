"""rotscope canary on scripted models: the baseline's own model stays OK (exit 0); ``fake/curve-600``
(falls at long lengths) is ALERTed (exit 1) at the long bins only; a check killed midway and run
again loses and doubles no probe (the store equals an uninterrupted canary's); the loop prints a
line per check and ends with exit 0 on SIGTERM; bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import tests.support.slow_rotscope  # noqa: F401  (registers slow-remote/NAME in this process too)
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

SLOW = Path(__file__).parents[1] / "support" / "slow_rotscope.py"
LONG = ("1600/0.00-0.33", "1600/0.67-1.00")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny experiment (3 lengths x 2 depths x 4 cases: 6 bins) and its baseline run."""
    root = tmp_path_factory.mktemp("canary")
    data: dict[str, Any] = {
        "name": "exp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 400, 1600],
        "depths": ["beginning", "end"],
        "limit": 4,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
        "subjects": [{"name": "prod", "model": "fake/curve-600"}],
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    result = invoke("run", root / "exp.yaml", "--out", root / "base")
    assert result.exit_code == 0, result.output
    return root


def _canary(root: Path, store: str, *args: str) -> Any:
    return invoke("canary", root / "exp.yaml", "--baseline", root / "base", "--out", root / store, *args)


def _probes(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(
            "SELECT number, slot, bin, item, baseline, score FROM canary_probes ORDER BY number, slot"
        ).fetchall()


def test_the_baselines_own_model_is_ok(root: Path) -> None:
    result = _canary(root, "same.db")
    assert result.exit_code == 0, result.output
    assert "check 1" in result.stdout and ": OK;" in result.stdout
    probes = _probes(root / "same.db")
    assert len(probes) == 60  # 64 calls // 6 bins = 10 per bin
    assert {row[2] for row in probes} == {
        f"{n}/{p}" for n in (200, 400, 1600) for p in ("0.00-0.33", "0.67-1.00")
    }
    assert all(row[4] == row[5] == 1.0 for row in probes)


def test_a_model_falling_at_long_lengths_is_alerted_at_the_long_bins(root: Path) -> None:
    first = _canary(root, "curve.db", "--subject", "fake/curve-600")
    assert first.exit_code in (0, 1, 3), first.output
    second = _canary(root, "curve.db", "--subject", "fake/curve-600", "--json")
    assert second.exit_code == 1, second.output
    body = json.loads(second.stdout)
    assert body["check"] == 2 and body["status"] == "ALERT"
    assert set(LONG) <= set(body["responsible"])
    assert not [name for name in body["responsible"] if name.startswith("200/")]
    by_bin = {entry["bin"]: entry for entry in body["bins"]}
    assert all(by_bin[name]["drop_lower"] > 0.02 and by_bin[name]["probes"] == 20 for name in LONG)
    with sqlite3.connect(root / "curve.db") as db:
        stored = db.execute("SELECT number, status FROM canary_checks ORDER BY number").fetchall()
    assert stored[-1] == (2, "ALERT") and len(stored) == 2


def test_a_subject_name_is_resolved_as_run_takes_it(root: Path) -> None:
    result = _canary(root, "named.db", "--subject", "prod", "--calls", "120", "--markdown")
    assert result.exit_code == 1, result.output  # 20 probes per bin: one check is enough
    assert "## Canary check 1: ALERT" in result.stdout and "prod (fake/curve-600)" in result.stdout
    assert all(f"| {name} | 20 | 1.000 | 0.000 |" in result.stdout for name in LONG)


def test_length_bins_from_a_production_histogram(root: Path) -> None:
    histogram = root / "lengths.json"  # OTLP/JSON: counts as strings; 200 and 400 share a bucket
    histogram.write_text(
        json.dumps({"explicitBounds": [500, 2000, 8000], "bucketCounts": ["60", "30", "10", "0"]})
    )
    result = _canary(
        root, "hist.db", "--subject", "prod", "--length-histogram", histogram, "--calls", "80", "--json"
    )
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    bins = [
        f"({low}, {high}]/{third}"
        for low, high in ((0, 500), (500, 2000))
        for third in ("0.00-0.33", "0.67-1.00")
    ]
    assert [entry["bin"] for entry in body["bins"]] == [*bins, "pooled"]
    assert {"(500, 2000]/0.00-0.33", "(500, 2000]/0.67-1.00"} <= set(body["responsible"])
    assert "no planned length in (2000, 8000] (10% of production's prompts)" in result.stderr
    histogram.write_text(json.dumps({"explicitBounds": [500], "bucketCounts": [1]}))
    assert_bad_input(_canary(root, "hist2.db", "--length-histogram", histogram), "one more count")


def test_a_check_killed_midway_and_run_again_loses_and_doubles_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = root / "killed.db"
    args = [
        str(SLOW), "canary", str(root / "exp.yaml"), "--baseline", str(root / "base"),
        "--out", str(store), "--subject", "slow-remote/lexical",
    ]  # fmt: skip
    env = {**os.environ, "SLOW_ROTSCOPE_LATENCY_S": "0.05"}
    process = subprocess.Popen([sys.executable, *args], cwd=root, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            if store.is_file() and len(_safe_probes(store)) >= 8:
                break
            time.sleep(0.01)
        assert process.poll() is None, process.communicate()[1]
        process.kill()
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    left = _probes(store)
    assert 8 <= len(left) < 60
    monkeypatch.setenv("SLOW_ROTSCOPE_LATENCY_S", "0")
    rerun = _canary(root, "killed.db", "--subject", "slow-remote/lexical")  # in this process: faster
    assert rerun.exit_code == 0, rerun.output
    assert "check 1 " in rerun.stdout  # the killed check taken up, not a new one
    resumed = _probes(store)
    assert [row[1] for row in resumed] == list(range(60))
    assert set(left) <= set(resumed)
    alone = _canary(root, "alone.db", "--subject", "slow-remote/lexical")
    assert alone.exit_code == 0, alone.output
    assert resumed == _probes(root / "alone.db")


def _safe_probes(path: Path) -> list[tuple[Any, ...]]:
    try:
        return _probes(path)
    except sqlite3.Error:  # not made yet
        return []


def test_the_loop_prints_a_line_per_check_and_ends_on_sigterm_with_0(root: Path) -> None:
    store = root / "loop.db"
    args = [
        str(SLOW), "canary", str(root / "exp.yaml"), "--baseline", str(root / "base"),
        "--out", str(store), "--subject", "slow-remote/lexical", "--every", "0.2s",
    ]  # fmt: skip
    env = {**os.environ, "SLOW_ROTSCOPE_LATENCY_S": "0"}
    process = subprocess.Popen(
        [sys.executable, *args], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert lines[0].startswith("check 1 ") and lines[1].startswith("check 2 ")
    with sqlite3.connect(store) as db:
        unfinished = db.execute("SELECT count(*) FROM canary_checks WHERE finished_at IS NULL").fetchone()[0]
    assert unfinished == 0  # the check in flight was finished, not left half done


def test_max_checks_and_json_lines(root: Path) -> None:
    result = _canary(root, "lines.db", "--every", "1ms", "--max-checks", "2", "--json")
    assert result.exit_code == 2  # 1ms is no interval
    result = _canary(root, "lines.db", "--every", "0.01s", "--max-checks", "2", "--json")
    assert result.exit_code == 0, result.output
    bodies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [body["check"] for body in bodies] == [1, 2] and {body["status"] for body in bodies} == {"OK"}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--baseline-missing"], "no run.db"),
        (["--every", "soon"], "--every"),
        (["--every", "400d"], "outside 0.01s to 366d"),
        (["--calls", "1000000000000"], "from 1 to 10,000 probe calls"),
        (["--calls", "0"], "from 1 to 10,000 probe calls"),
        (["--max-checks", "2"], "only with --every"),
        (["--every", "1h", "--max-checks", "0"], "--max-checks: from 1"),
        (["--calls", "3"], "fewer than the 6 bins"),
        (["--subject", "nobody"], "unknown subject"),
        (["--fail-margin", "0.001", "--warn-margin", "0.5"], "margins"),
        (["--json", "--markdown"], "choose one"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(root: Path, args: list[str], fragment: str) -> None:
    if args == ["--baseline-missing"]:
        result = invoke("canary", root / "exp.yaml", "--baseline", root / "nowhere", "--out", root / "bad.db")
    else:
        result = _canary(root, "bad.db", *args)
    assert_bad_input(result, fragment)
    assert not (root / "bad.db").exists()  # refused before a store was made


def test_another_settings_or_a_foreign_store_is_refused(root: Path) -> None:
    assert _canary(root, "settings.db").exit_code == 0
    assert_bad_input(_canary(root, "settings.db", "--fail-margin", "0.05"), "other settings", "fail")
    (root / "foreign.db").write_text("not a store", encoding="utf-8")
    assert_bad_input(_canary(root, "foreign.db"), "not a monitoring store")


def test_a_canary_on_the_likelihood_probes_the_answer_probability(root: Path) -> None:
    """``--score likelihood``: the baseline's and each probe's score is the gold answer's
    probability (the lexical fake's 0.9 where it finds the needle), and the alert says so."""
    result = _canary(root, "likely.db", "--score", "likelihood", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["score"] == "likelihood"
    probes = _probes(root / "likely.db")
    assert probes and all(row[4] == pytest.approx(0.9) and row[5] == pytest.approx(0.9) for row in probes)


def test_a_likelihood_canary_of_a_model_that_cannot_read_one_is_bad_input(root: Path) -> None:
    result = _canary(root, "remote.db", "--score", "likelihood", "--subject", "fake-remote/lexical")
    assert_bad_input(result, "--score likelihood: fake-remote/lexical cannot read an answer's likelihood")
    assert not (root / "remote.db").exists()


def test_checks_become_otlp_evaluation_events_a_proto_parser_reads(root: Path) -> None:
    """Issue 51: ``--otlp-file``: each check one OTLP/JSON ``ExportLogsServiceRequest`` line of
    ``gen_ai.evaluation.result`` events, one per bin, that opentelemetry-proto's own JSON parser
    reads; names, numbers, labels and digests only (no prompt, no reply)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    events = root / "events.jsonl"
    result = _canary(root, "otlp.db", "--subject", "fake/curve-600", "--calls", "120", "--otlp-file", events)
    assert result.exit_code == 1, result.output
    (line,) = events.read_text(encoding="utf-8").splitlines()
    request = json_format.Parse(line, ExportLogsServiceRequest())
    records = request.resource_logs[0].scope_logs[0].log_records
    assert len(records) == 7  # 6 bins and the pooled one
    attributes = [{item.key: item.value for item in record.attributes} for record in records]
    assert {record.event_name for record in records} == {"gen_ai.evaluation.result"}
    assert {found["gen_ai.evaluation.name"].string_value for found in attributes} == {
        "rotscope.canary.accuracy"
    }
    labels = {found["rotscope.canary.bin"].string_value: found["gen_ai.evaluation.score.label"].string_value
              for found in attributes}  # fmt: skip
    assert labels["1600/0.00-0.33"] == "alert" and labels["200/0.00-0.33"] == "ok"
    assert all(found["gen_ai.request.model"].string_value == "fake/curve-600" for found in attributes)
    assert all(len(found["rotscope.template_digest"].string_value) >= 8 for found in attributes)
    with sqlite3.connect(f"file:{root / 'base' / 'run.db'}?mode=ro", uri=True) as db:
        question = db.execute("SELECT question FROM items LIMIT 1").fetchone()[0]
    assert question not in line and question.split()[-1] not in line


def test_a_bad_otlp_endpoint_is_one_line(root: Path) -> None:
    result = _canary(root, "x.db", "--otlp-endpoint", "localhost:4318")
    assert result.exit_code == 2 and "--otlp-endpoint" in result.stderr
    assert not (root / "x.db").exists()
