"""The engine worker: answers from another process, a native crash is an error completion naming the
signal, the worker restarts (in a safer mode when the engine has one), repeated crashes stop the run."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.errors import EngineCrashed
from rotscope.execution.executors.worker import WorkerBackend
from rotscope.execution.workflows.runner import EngineStopped, resume_experiment, run_experiment
from rotscope.types import Completion, GenerateRequest, GenerationParams


class WorkerFake(FakeBackend):
    """The lexical fake as a local engine that can be sent to a worker. In ``fast`` mode it kills
    its own process with SIGSEGV on call ``crash_at`` (counted in the worker), or on every call from
    ``crash_at`` on when ``always``; ``fallback`` switches to ``safe``, which never crashes."""

    def __init__(self, crash_at: int = 0, *, always: bool = False, delay_s: float = 0.0) -> None:
        super().__init__("lexical", lexical_responder())
        self.capabilities = replace(self.capabilities, worker_process=True)
        self.crash_at = crash_at
        self.always = always
        self.delay_s = delay_s
        self.engine_mode = "fast"
        self.served = 0

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_responder": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._responder = lexical_responder()

    async def generate(self, request: GenerateRequest) -> Completion:
        self.served += 1
        crash = self.crash_at and (
            self.served >= self.crash_at if self.always else self.served == self.crash_at
        )
        if crash and self.engine_mode == "fast":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.delay_s:
            time.sleep(self.delay_s)
        completion = await super().generate(request)
        return Completion(
            text=f"{completion.text} [pid {os.getpid()}]", prompt_tokens=completion.prompt_tokens
        )

    def fallback(self, reason: str) -> str | None:
        if self.engine_mode == "safe":
            return None
        self.engine_mode = "safe"
        return "retrying in safe mode"


class NoFallbackFake(WorkerFake):
    """A worker fake with no safer mode to go to."""

    def fallback(self, reason: str) -> str | None:
        return None


def request(text: str = "hello") -> GenerateRequest:
    messages = ({"role": "user", "content": f"<context>\n{text}\n</context>\nQuestion: what?"},)
    return GenerateRequest(messages, (1, 2, 3), GenerationParams())


def generate(backend: WorkerBackend) -> Completion:
    return asyncio.run(backend.generate(request()))


def test_answers_come_from_another_process() -> None:
    backend = WorkerBackend(WorkerFake())
    try:
        completion = generate(backend)
        assert completion.error is None
        assert f"[pid {backend.pid}]" in completion.text
        assert backend.pid != os.getpid()
        assert completion.engine_mode == "fast"
    finally:
        backend.close()
    assert backend.pid is None


def test_sigsegv_during_a_call_is_an_error_naming_the_signal_and_the_worker_restarts() -> None:
    notices: list[str] = []
    backend = WorkerBackend(WorkerFake(delay_s=3.0), notice=notices.append)
    try:
        backend.start()
        first_pid = backend.pid
        assert first_pid is not None
        killer = threading.Timer(0.5, os.kill, (first_pid, signal.SIGSEGV))
        killer.start()
        started = time.monotonic()
        crashed = generate(backend)
        assert time.monotonic() - started < 3.0, "the crash was noticed only after the call would have ended"
        assert crashed.error is not None and "SIGSEGV" in crashed.error
        assert crashed.text == ""
        assert notices and "SIGSEGV" in notices[0] and "retrying in safe mode" in notices[0]
        backend.engine.delay_s = 0.0  # type: ignore[attr-defined]
        again = generate(backend)
        assert again.error is None
        assert backend.pid not in (None, first_pid)
        assert again.engine_mode == "safe"
        assert backend.crashes == 1 and backend.crashes_in_a_row == 0
    finally:
        backend.close()


def test_repeated_crashes_stop_with_engine_crashed() -> None:
    engine = NoFallbackFake(crash_at=1, always=True)
    notices: list[str] = []
    backend = WorkerBackend(engine, max_crashes=3, notice=notices.append)
    try:
        results = [generate(backend) for _ in range(3)]
        assert all(result.error is not None and "SIGSEGV" in result.error for result in results)
        assert len(notices) == 2 and all("restarting" in notice for notice in notices)
        with pytest.raises(EngineCrashed, match="3 times in a row"):
            generate(backend)
    finally:
        backend.close()


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def quick(corpus: Path, **changes: Any) -> Any:
    data: dict[str, Any] = {
        "model": "fake/lexical",
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [256],
        "depths": [0.0, 1.0],
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    data.update(changes)
    return build_config(data)


def test_a_crash_mid_run_is_one_error_row_the_rest_reruns_in_the_safe_mode(
    tmp_path: Path, corpus: Path
) -> None:
    config = quick(corpus)
    notices: list[str] = []

    class Notices:
        def start(self, items: int, prompt_tokens: int, prefill: Any = None) -> None: ...
        def advance(self, item: Any, completion: Any) -> None: ...
        def finish(self) -> None: ...
        def notice(self, message: str) -> None:
            notices.append(message)

    run_dir = run_experiment(
        config, run_dir=tmp_path / "run", backend=WorkerFake(crash_at=3), reporter=Notices()
    )
    first = rows(run_dir)
    errors = [row for row in first if row["status"] == "error"]
    assert len(errors) == 1 and "SIGSEGV" in errors[0]["error"] and "(fast)" in errors[0]["error"]
    ok = [row for row in first if row["status"] == "ok"]
    assert ok and {row["engine_mode"] for row in ok} == {"safe"}  # the two calls made in fast mode ran again
    assert any("again with safe" in notice for notice in notices)
    assert any(notice.startswith("planned ") for notice in notices)

    resume_experiment(run_dir)
    final = rows(run_dir)
    assert [row["item_id"] for row in final] == [row["item_id"] for row in first]
    assert all(row["status"] == "ok" for row in final)
    reference = rows(run_experiment(quick(corpus), run_dir=tmp_path / "reference"))
    strip = lambda text: text.rsplit(" [pid", 1)[0]  # noqa: E731
    assert [strip(row["response"]) for row in final] == [row["response"] for row in reference]
    assert [row["outcome"] for row in final] == [row["outcome"] for row in reference]


def test_crashes_in_a_row_stop_the_run_and_resume_finishes(tmp_path: Path, corpus: Path) -> None:
    engine = NoFallbackFake(crash_at=1, always=True)
    with pytest.raises(EngineStopped) as stopped:
        run_experiment(quick(corpus, executor={"max_crashes": 2}), run_dir=tmp_path / "run", backend=engine)
    assert stopped.value.done == 0 and stopped.value.total == 6
    assert "2 times in a row" in stopped.value.reason
    kept = rows(tmp_path / "run")
    assert sum(row["status"] == "error" for row in kept) == 2
    assert sum(row["status"] == "pending" for row in kept) == 4
    resume_experiment(tmp_path / "run")  # a fresh engine (safe by default this time) finishes
    assert all(row["status"] == "ok" for row in rows(tmp_path / "run"))


def test_an_oom_kill_restarts_the_worker_without_the_safe_mode() -> None:
    """SIGKILL (the OOM killer) is no fault of the engine's code: no fallback, nothing remembered."""
    notices: list[str] = []
    backend = WorkerBackend(WorkerFake(delay_s=3.0), notice=notices.append)
    try:
        backend.start()
        pid = backend.pid
        assert pid is not None
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
        killed = generate(backend)
        assert killed.error is not None and "SIGKILL" in killed.error
        assert backend.engine_mode == "fast"
        assert notices and "restarting" in notices[0]
    finally:
        backend.close()
