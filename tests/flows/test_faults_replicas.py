"""Issue 52's fault battery, replicas: ``serve/NAME`` runs on two fake server replicas
(``tests/support/completions_server.py``) where one fails in each way a server fails (HTTP 500, wrong
prompt-token counts, garbage bodies, hangs past the timeout, connection refused), from its first
call, after its 5th or every other call; both replicas failing; and ``--resume --base-url`` with good,
bad and moved URLs. Every case: no traceback, nothing outside the run folder touched, and where a
healthy replica is left every row answered on the first pass."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from rotscope.store import RunStore
from tests.support.cli_helpers import assert_bad_input, invoke
from tests.support.completions_server import FAULTS, CompletionsServer, Fault
from tests.support.fault_battery import assert_no_traceback, bystander, tree_digest

pytestmark = pytest.mark.fault_battery

TIMEOUT_S = 1.0
"""The client's timeout: a hanging replica costs this much per call it is sent, and a healthy replica's
reply on a busy machine must come within it (0.3 s once turned a healthy call into an error row while
the rest of the suite ran)."""


@pytest.fixture(scope="module")
def bundled() -> Path:
    from rotscope.backends.llamacpp.backend import bundled_model_path

    return bundled_model_path()


@pytest.fixture
def started() -> Iterator[list[CompletionsServer]]:
    """The servers a case starts (``serve``), stopped after it."""
    servers: list[CompletionsServer] = []
    yield servers
    for server in servers:
        server.stop()


def serve(started: list[CompletionsServer], **fault: Any) -> CompletionsServer:
    server = CompletionsServer(kind="vllm", hang_s=5.0, **fault).start()
    started.append(server)
    return server


def closed_port() -> str:
    """A URL where nothing listens (the port was just free)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def write_config(
    folder: Path, bundled: Path, urls: str, out: Path, lengths: tuple[int, ...] = (200, 300), **extra: Any
) -> Path:
    """A grid of 12 calls per length (24 by default) on ``serve/smollm2`` (JSON is YAML), failing
    calls given up fast."""
    config = {
        "name": "replicas",
        "model": "serve/smollm2",
        "tasks": ["niah"],
        "limit": 3,
        "lengths": list(lengths),
        "depths": [0.0, 0.5, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 8, "seed": 7},
        "cache": {"enabled": False},
        "score": "accuracy",
        "serve": {
            "tokenizer": str(bundled),
            "base_url": urls,
            "timeout_s": TIMEOUT_S,
            "max_attempts": 1,
            **extra,
        },
        "out": str(out),
    }
    path = folder / "experiment.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def statuses(out: Path) -> list[str]:
    with sqlite3.connect(out / "run.db") as db:
        return [row[0] for row in db.execute("SELECT status FROM items")]


def executor(out: Path) -> dict[str, Any]:
    with RunStore.open_existing(out) as store:
        found: dict[str, Any] = dict(store.meta()["executor"])
    return found


def run_case(
    tmp_path: Path, bundled: Path, urls: str, *args: str, lengths: tuple[int, ...] = (200, 300)
) -> tuple[Result, Path]:
    """``rotscope run`` of the grid on ``urls``, a bystander folder beside it left as it was."""
    out = tmp_path / "run"
    outside = bystander(tmp_path / "outside")
    before = tree_digest(outside)
    result = invoke("run", write_config(tmp_path, bundled, urls, out, lengths), *args)
    assert_no_traceback(result)
    assert tree_digest(outside) == before
    return result, out


STARTS = {"first": {"fault_after": 0}, "after5": {"fault_after": 5}, "every2": {"fault_every": 2}}


def fault_cases() -> list[Any]:
    cases = [
        pytest.param(fault, start, id=f"{fault}-{start}")
        for fault in FAULTS
        for start in STARTS
        if not (fault == "refuse" and start == "every2")  # a refusing server stays gone
    ]
    return [*cases, pytest.param("refuse", "never-up", id="refuse-never-up")]


@pytest.mark.parametrize(("fault", "start"), fault_cases())
def test_one_failing_replica_leaves_every_row_answered_on_the_first_pass(
    tmp_path: Path, bundled: Path, started: list[CompletionsServer], fault: Fault, start: str
) -> None:
    healthy = serve(started)
    if start == "never-up":
        failing_url = closed_port()
    else:
        failing = serve(started, fault=fault, **STARTS[start])
        failing_url = failing.base_url
    result, out = run_case(tmp_path, bundled, f"{healthy.base_url},{failing_url}")
    assert result.exit_code == 0, result.output
    rows = statuses(out)
    assert len(rows) == 24 and rows.count("ok") == 24, rows  # every failed call answered elsewhere
    health = {record["replica"]: record for record in executor(out)["health"]}
    assert health[healthy.base_url]["failures"] == 0
    sick = health[failing_url]
    if start != "never-up":
        assert sick["failures"] >= 1 and sick["calls"] >= sick["failures"]
        assert sick["calls"] == len(failing.requests) + len(failing.faulted) - (fault == "counts") * len(
            failing.faulted
        )
    if fault != "refuse" and start == "first":  # three failures in a row take it out
        assert sick["taken_out"] and sick["taken_out"][0]["call"] == 3
    assert f"{failing_url} {sick['calls']} calls, {sick['failures']} failed" in result.output
    assert health[healthy.base_url]["calls"] + sick["calls"] - sick["failures"] == 24


@pytest.mark.parametrize("fault", FAULTS)
def test_both_replicas_failing_gives_error_rows_that_resume_completes_on_moved_replicas(
    tmp_path: Path, bundled: Path, started: list[CompletionsServer], fault: Fault
) -> None:
    failing = [serve(started, fault=fault, fault_after=2) for _ in range(2)]
    # one length, 12 calls: each replica answers 2, then fails (a hanging one costs TIMEOUT_S a call)
    urls = ",".join(server.base_url for server in failing)
    result, out = run_case(tmp_path, bundled, urls, lengths=(200,))
    rows = statuses(out)
    if fault == "refuse":  # no server answers at all in the end: the run stops, its calls pending
        assert_bad_input(result, "no server answers")
    else:  # the last replica in the pool stays in it: its failed calls are error rows
        assert result.exit_code == 0, result.output
        assert rows.count("error") >= 1
    assert rows.count("ok") >= 4  # what each replica answered before it failed is kept
    moved = [serve(started) for _ in range(2)]
    urls = ",".join(server.base_url for server in moved)
    resumed = invoke("run", "--resume", out, "--base-url", urls)
    assert_no_traceback(resumed)
    assert resumed.exit_code == 0, resumed.output
    assert statuses(out).count("ok") == 12
    answered = sum(len(server.requests) for server in moved)
    assert answered == 12 - rows.count("ok")  # only what was left
    sessions = executor(out)["sessions"]
    assert [session["replicas"] for session in sessions][-1] == [s.base_url for s in moved]
    assert len(sessions) == 2 and sessions[0]["replicas"] == [s.base_url for s in failing]


@pytest.fixture(scope="module")
def cut_short_once(tmp_path_factory: pytest.TempPathFactory, bundled: Path) -> Path:
    """A run whose two replicas both stopped answering after their 3rd call: pending rows left.
    Made once in this module; its replicas are stopped before any test reads it (their ports free)."""
    root = tmp_path_factory.mktemp("cut-short")
    servers: list[CompletionsServer] = []
    try:
        for _ in range(2):
            serve(servers, fault="refuse", fault_after=3)
        result, out = run_case(root, bundled, ",".join(server.base_url for server in servers))
    finally:
        for server in servers:
            server.stop()
    assert_bad_input(result, "no server answers")
    assert statuses(out).count("ok") == 6
    # Kept as it is now, its SQLite -wal/-shm files with it: a read-only open (a refused resume's)
    # makes them where they are missing and cannot remove them, so a later copy must not lack them.
    return Path(shutil.copytree(out, root / "kept"))


@pytest.fixture
def cut_short(tmp_path: Path, cut_short_once: Path) -> Path:
    """A copy of the cut-short run of this module, for a test to resume or leave alone."""
    return Path(shutil.copytree(cut_short_once, tmp_path / "run"))


@pytest.mark.parametrize(
    ("given", "says"),
    [
        pytest.param("ftp://127.0.0.1:9", "not an http(s) URL", id="not-http"),
        pytest.param("127.0.0.1:8000", "not an http(s) URL", id="no-scheme"),
        pytest.param("http://127.0.0.1:9,http://127.0.0.1:9/v1", "named twice", id="named-twice"),
        pytest.param(" , ", "serve.base_url", id="empty"),
    ],
)
def test_resume_with_a_bad_base_url_is_refused_in_one_line_and_changes_nothing(
    tmp_path: Path, cut_short: Path, given: str, says: str
) -> None:
    before = tree_digest(cut_short)
    assert_bad_input(invoke("run", "--resume", cut_short, "--base-url", given), says)
    assert tree_digest(cut_short) == before


def test_resume_on_replicas_where_nothing_listens_stops_and_a_later_resume_completes(
    tmp_path: Path, cut_short: Path, started: list[CompletionsServer]
) -> None:
    assert_bad_input(invoke("run", "--resume", cut_short, "--base-url", closed_port()), "no server answers")
    assert statuses(cut_short).count("ok") == 6
    good = serve(started)
    resumed = invoke("run", "--resume", cut_short, "--base-url", good.base_url)
    assert_no_traceback(resumed)
    assert statuses(cut_short).count("ok") == 24 and len(good.requests) == 18


def test_resume_with_the_same_replicas_back_completes_and_keeps_the_identity(
    tmp_path: Path, cut_short: Path, started: list[CompletionsServer]
) -> None:
    with RunStore.open_existing(cut_short) as store:
        identity = store.meta()["identity"]
    urls = executor(cut_short)["replicas"]
    revived = [CompletionsServer(kind="vllm", port=int(url.rsplit(":", 1)[1])).start() for url in urls]
    started.extend(revived)
    resumed = invoke("run", "--resume", cut_short, "--base-url", ",".join(urls))
    assert_no_traceback(resumed)
    assert statuses(cut_short).count("ok") == 24
    with RunStore.open_existing(cut_short) as store:
        assert store.meta()["identity"] == identity
    assert "replicas:" in resumed.output


def test_resume_moved_to_one_replica_records_it_with_the_pass_it_served_and_later_resumes_keep_it(
    tmp_path: Path, cut_short: Path, started: list[CompletionsServer]
) -> None:
    moved = serve(started, delay_s=0.0)
    resumed = invoke("run", "--resume", cut_short, "--base-url", f"{moved.base_url}/v1/")
    assert_no_traceback(resumed)
    assert resumed.exit_code == 0 and statuses(cut_short).count("ok") == 24
    sessions = executor(cut_short)["sessions"]
    assert sessions[-1]["replicas"] == [moved.base_url]
    assert [shard["replica"] for shard in sessions[-1]["passes"][0]["shards"]] == [moved.base_url]
    assert sessions[-1]["health"][0]["calls"] == 18
    assert moved.base_url in (cut_short / "config.yaml").read_text(encoding="utf-8")  # a plain --resume
    again = invoke("run", "--resume", cut_short)
    assert_no_traceback(again)
    assert len(moved.requests) == 18  # nothing left to send


def test_resume_base_url_of_a_run_that_is_not_on_replicas_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "fake"
    first = invoke("run", "--model", "fake/lexical", "--lengths", "256", "--limit", "1", "--out", out)
    assert_no_traceback(first, allowed=(0,))
    before = tree_digest(out)
    assert_bad_input(
        invoke("run", "--resume", out, "--base-url", "http://127.0.0.1:9"), "not a serve/NAME model"
    )
    assert tree_digest(out) == before
