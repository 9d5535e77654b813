"""The bundled model in its engine worker: the same answers as in-process, the same prefix reuse, and a
SIGSEGV of the worker in the middle of a run is one error row that ``--resume`` completes."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.executors.worker import WorkerBackend
from rotscope.execution.workflows.runner import resume_experiment, run_experiment


def tiny(**changes: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "model": "bundled",
        "tasks": ["niah"],
        "limit": 2,
        # six calls (two cases at two depths, two controls): enough for a crash after the third to
        # fall mid-run with calls left after it, and for the in-process answers to be compared
        "lengths": [300],
        "depths": [0.0, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 24, "seed": 0},
    }
    data.update(changes)
    return build_config(data)


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def answers(run_dir: Path) -> list[tuple[str, str, str]]:
    return [(row["item_id"], row["response"], row["outcome"]) for row in rows(run_dir)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run in the engine worker, extra buffers off (the mode a crash ends in)."""
    return run_experiment(
        tiny(llamacpp={"extra_buffers": "off"}), run_dir=tmp_path_factory.mktemp("ref") / "run"
    )


def test_the_worker_gives_the_in_process_answers_and_prefix_reuse(reference: Path, tmp_path: Path) -> None:
    inprocess = run_experiment(
        tiny(llamacpp={"extra_buffers": "off"}, executor={"kind": "inprocess"}), run_dir=tmp_path / "in"
    )
    assert answers(inprocess) == answers(reference)
    for run_dir in (inprocess, reference):
        summary = load_summary(run_dir).model_dump()
        assert summary["tokens"]["evaluated"] == summary["tokens"]["lower_bound"], summary["tokens"]
    worker_meta = load_summary(reference).model_dump()
    assert [row["engine_mode"] for row in rows(reference)] == ["extra_buffers=off"] * len(rows(reference))
    assert worker_meta["items"]["errors"] == 0


class KillAfter:
    """A reporter that sends SIGSEGV to the engine worker while the item after the ``after``-th runs."""

    def __init__(self, backend: WorkerBackend, after: int) -> None:
        self.backend = backend
        self.after = after
        self.done = 0
        self.killed: int | None = None

    def start(self, items: int, prompt_tokens: int, prefill: Any = None) -> None: ...

    def advance(self, item: Any, completion: Any) -> None:
        self.done += 1
        if self.done == self.after and self.killed is None:
            self.killed = self.backend.pid
            threading.Timer(0.1, os.kill, (self.killed, signal.SIGSEGV)).start()

    def finish(self) -> None: ...

    def notice(self, message: str) -> None: ...


def test_a_sigsegv_of_the_worker_mid_run_is_an_error_row_and_resume_completes(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tiny()
    backend = WorkerBackend(create_backend(config))
    reporter = KillAfter(backend, after=3)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=backend, reporter=reporter)
    assert reporter.killed is not None
    first = rows(run_dir)
    errors = [row for row in first if row["status"] == "error"]
    assert len(errors) == 1, [row["error"] for row in errors]
    assert "SIGSEGV" in errors[0]["error"]
    assert "engine crashed with SIGSEGV" in capsys.readouterr().err
    modes = {row["engine_mode"] for row in first if row["status"] == "ok"}
    assert modes == {"extra_buffers=off"}  # the run ended in safe mode, and its rows come from it alone
    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["errors"] == 1

    resume_experiment(run_dir)
    final = rows(run_dir)
    assert len(final) == len(rows(reference))
    assert all(row["status"] == "ok" for row in final)
    assert answers(run_dir) == answers(reference)
