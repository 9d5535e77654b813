"""One writer per run folder: a second run or resume of a folder being written exits 2 at once,
naming the holder's pid, and runs nothing; readers work meanwhile."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rotscope.cli import EXIT_BUDGET, app
from rotscope.execution.state.lock import LOCK_FILE, RunFolderLocked, RunLock

SLOW_CLI = Path(__file__).resolve().parents[1] / "support" / "slow_rotscope.py"
INPUT_USD, OUTPUT_USD = 3.0, 15.0  # per million tokens


def write_experiment(tmp_path: Path, corpus: Path, model: str) -> Path:
    """Twelve calls of a priced model, with their own response cache."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        "\n".join(
            [
                f"model: {model}",
                "tasks: [niah]",
                "limit: 2",
                "lengths: [200, 300]",
                "depths: [0.0, 1.0]",
                f"filler: {{kind: text, glob: '{corpus}/*.txt'}}",
                f"prices: {{{model}: {{input: {INPUT_USD}, output: {OUTPUT_USD}}}}}",
                "limits: {slow-remote: {concurrency: 1}}",
                f"cache: {{path: '{tmp_path}/cache/responses.db'}}",
            ]
        ),
        encoding="utf-8",
    )
    return experiment


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def slow_cli(*args: str | Path) -> list[str]:
    return [sys.executable, str(SLOW_CLI), *map(str, args)]


def environment(gate: Path | None = None) -> dict[str, str]:
    """This checkout's code for the child; ``gate``: its calls after the first wait for that file.
    Its calls take 0.01 s: the gate, not their latency, is what holds a run mid-way here."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    gated = {"SLOW_ROTSCOPE_GATE": str(gate)} if gate is not None else {}
    fast = {"SLOW_ROTSCOPE_LATENCY_S": "0.01"}
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", **fast, **gated}


def wait_until_running(
    run_dir: Path, pid: int, process: subprocess.Popen[str], done: int, deadline_s: float = 20.0
) -> None:
    """Until ``pid`` holds the folder's lock (its pid in the lock file) or, without a lock, has
    recorded a call beyond ``done``: then a second process meets it mid-run either way."""
    end = time.monotonic() + deadline_s
    lock = run_dir / LOCK_FILE
    while time.monotonic() < end and process.poll() is None:
        if lock.is_file() and lock.read_text(encoding="ascii").strip() == str(pid):
            return
        if sum(row["status"] == "ok" for row in rows(run_dir)) > done:
            return
        time.sleep(0.05)


def test_two_resumes_at_once_the_second_exits_2_naming_the_pid_and_the_budget_holds(
    tmp_path: Path, corpus: Path
) -> None:
    experiment = write_experiment(tmp_path, corpus, "slow-remote/lexical")
    run_dir = tmp_path / "run"
    first = subprocess.run(
        slow_cli("run", experiment, "--out", run_dir, "--max-cost", "0.003"),
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == EXIT_BUDGET, first.stderr
    started_with = sum(row["status"] == "ok" for row in rows(run_dir))
    assert 0 < started_with < len(rows(run_dir))

    cap = "0.007"
    resume = slow_cli("run", "--resume", run_dir, "--max-cost", cap)
    gate = tmp_path / "gate"  # the first resume holds its second call until the test opens it
    holder = subprocess.Popen(
        resume, env=environment(gate), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_until_running(run_dir, holder.pid, holder, started_with)
        second = subprocess.run(resume, env=environment(), capture_output=True, text=True, timeout=120)
        still_running = holder.poll() is None
        shown = CliRunner().invoke(app, ["show", str(run_dir)])  # a reader, in this process
        shown_while_running = holder.poll() is None
        gate.touch()
        holder_out, holder_err = holder.communicate(timeout=120)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert second.returncode == 2, second.stdout + second.stderr
    message = " ".join(second.stderr.split())
    assert message.startswith("rotscope: ") and f"pid {holder.pid}" in message, message
    assert "Traceback" not in second.stderr and len(second.stderr.strip().splitlines()) == 1
    assert still_running, "the second resume returned only after the first had finished"
    assert shown.exit_code == 0 and shown_while_running, shown.output
    assert holder.returncode in (0, EXIT_BUDGET), holder_out + holder_err
    stored = rows(run_dir)
    assert max(row["attempts"] for row in stored) == 1, "an item was executed twice"
    assert sum(row["cost"] or 0.0 for row in stored) <= float(cap)
    assert sum(row["status"] == "ok" for row in stored) > started_with


@pytest.fixture()
def finished_run(tmp_path: Path, corpus: Path) -> Path:
    experiment = write_experiment(tmp_path, corpus, "fake/lexical")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir


def test_a_resume_of_a_locked_folder_exits_2_and_changes_nothing(finished_run: Path) -> None:
    before = rows(finished_run)
    with RunLock(finished_run):
        result = CliRunner().invoke(app, ["run", "--resume", str(finished_run)])
    assert result.exit_code == 2, result.output
    assert f"pid {os.getpid()}" in " ".join(result.stderr.split())
    assert rows(finished_run) == before


def test_readers_work_while_a_run_holds_the_lock(finished_run: Path, tmp_path: Path) -> None:
    with RunLock(finished_run):
        for command in (
            ["show", str(finished_run), "--json"],
            ["report", str(finished_run), "-o", str(tmp_path / "report.html")],
            ["export", str(finished_run), "--format", "jsonl"],
            [
                "gate",
                "--baseline",
                str(finished_run),
                "--candidate",
                str(finished_run),
                "-o",
                str(tmp_path / "g.json"),
            ],
        ):
            result = CliRunner().invoke(app, command)
            assert result.exit_code in (0, 1, 3), (command, result.output)
            assert "another rotscope run" not in result.output


def test_a_fresh_run_into_a_folder_another_run_is_creating_exits_2(tmp_path: Path, corpus: Path) -> None:
    experiment = write_experiment(tmp_path, corpus, "fake/lexical")
    out = tmp_path / "out"
    out.mkdir()
    with RunLock(out):  # the other run is planning: no run.db yet
        result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"pid {os.getpid()}" in " ".join(result.stderr.split())
    assert not (out / "run.db").exists()
    # the lock file left behind by a finished holder does not make the folder "not empty"
    again = CliRunner().invoke(app, ["run", str(experiment), "--out", str(out)])
    assert again.exit_code == 0, again.output


def test_the_lock_is_released_when_the_holder_ends_and_names_it_while_held(tmp_path: Path) -> None:
    with RunLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text(encoding="ascii").strip() == str(os.getpid())
        with pytest.raises(RunFolderLocked, match=f"pid {os.getpid()}"):
            RunLock(tmp_path).acquire()
    with RunLock(tmp_path):
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import fcntl,os,time; f=os.open({str(tmp_path / LOCK_FILE)!r}, os.O_RDWR); "
            "fcntl.flock(f, fcntl.LOCK_EX); os.write(f, str(os.getpid()).encode()); "
            "print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderLocked, match=f"pid {holder.pid}"):
            RunLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(tmp_path):  # the OS let go of a killed holder's lock
        pass


def test_a_failed_plan_removes_the_folder_it_created(tmp_path: Path, corpus: Path) -> None:
    experiment = write_experiment(tmp_path, corpus, "fake/unknown-model")
    out = tmp_path / "new" / "run"
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists()
