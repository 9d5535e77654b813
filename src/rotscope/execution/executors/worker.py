"""A local engine in a worker process of its own: a native crash is an error row, never the run's end.

The worker owns the engine (and so its KV cache); the run's process keeps the tokenizer, plans,
scores and writes the run store. The boundary is a request in and a completion out, over a pipe,
for any backend that can be pickled without its loaded engine: nothing here knows llama.cpp.

When the worker dies (SIGSEGV, SIGILL, SIGABRT, an OOM kill), the call in flight returns an error
completion naming the signal, the engine is asked to fall back to a safer mode if it has one, and
the next call starts a fresh worker. After ``max_crashes`` crashes in a row the next call raises
``EngineCrashed``: the run stops (exit 5) with every finished row kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Protocol, runtime_checkable

from rotscope.backends.llamacpp.extra_buffers import signal_name
from rotscope.errors import EngineCrashed
from rotscope.types import (
    Backend,
    BackendDescription,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    ReadsLikelihood,
    Tokenizer,
)

_POLL_S = 0.1
NATIVE_FAULTS = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT})
"""Signals of a fault in the engine's own code, after which it may retry in a safer mode."""
_STOP_WAIT_S = 5.0


@runtime_checkable
class FallbackEngine(Protocol):
    """An engine with a safer mode to retry in after a native crash (llama.cpp: extra buffers off)."""

    engine_mode: str

    def fallback(self, reason: str) -> str | None:
        """Switch to the safer mode for the next start; the notice to print, or ``None`` if none."""
        ...


def _serve(connection: Connection) -> None:
    """The worker's loop: the run's import path and the engine arrive first, then one request at a time."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; it stops us
    sys.path[:] = connection.recv()
    engine: Backend = connection.recv()
    try:
        while True:
            try:
                operation, argument = connection.recv()
            except EOFError:
                return  # the run's process is gone
            if operation == "generate":
                connection.send(asyncio.run(engine.generate(argument)))
            elif operation == "likelihood":
                assert isinstance(engine, ReadsLikelihood)
                connection.send(asyncio.run(engine.likelihood(argument)))
            elif operation == "clear_cache":
                engine.clear_cache()  # type: ignore[attr-defined]
                connection.send(None)
            elif operation == "stop":
                return
    finally:
        engine.close()


def _default_notice(message: str) -> None:
    print(f"rotscope: {message}", file=sys.stderr, flush=True)


class WorkerBackend:
    """Runs ``engine`` in a worker process; everything but the calls is answered here."""

    def __init__(
        self,
        engine: Backend,
        *,
        max_crashes: int = 3,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        self.engine = engine
        self.model_id = engine.model_id
        self.context_window = engine.context_window
        self.capabilities = replace(engine.capabilities, worker_process=False)  # it runs in one already
        self.max_crashes = max_crashes
        self.notice = notice or _default_notice
        self.crashes = 0
        self.crashes_in_a_row = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._lock = threading.Lock()
        self._closing = False

    @property
    def engine_mode(self) -> str | None:
        """The mode the next call runs in (``None`` for an engine that has only one)."""
        return self.engine.engine_mode if isinstance(self.engine, FallbackEngine) else None

    @property
    def pid(self) -> int | None:
        """The worker's process id while one runs."""
        return None if self._process is None else self._process.pid

    def tokenizer(self) -> Tokenizer:
        return self.engine.tokenizer()

    def describe(self) -> BackendDescription:
        return self.engine.describe()

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        self.engine.reserve(max_prompt_tokens, max_new_tokens)
        self._stop()  # a running worker was sized for other prompts: the next call starts anew

    def start(self) -> None:
        """Start the worker (``python -m rotscope.execution.executors.worker``) if none runs. A fresh
        interpreter, not a fork or multiprocessing's spawn, which would import the caller's main script
        again."""
        if self._process is not None and self._process.poll() is None:
            return
        self._stop()
        ours, theirs = socket.socketpair()
        with theirs:
            process = subprocess.Popen(
                [sys.executable, "-m", "rotscope.execution.executors.worker", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        connection = Connection(ours.detach())
        self._process, self._connection = process, connection
        connection.send(sys.path)
        connection.send(self.engine)

    def _exchange(self, operation: str, argument: object) -> tuple[bool, object]:
        """Send one operation and wait for its answer; ``(False, return code)`` when the worker died."""
        with self._lock:
            try:
                self.start()  # a worker that dies while it starts is a crash like any other
                assert self._connection is not None and self._process is not None
                connection, process = self._connection, self._process
                connection.send((operation, argument))
                while not connection.poll(_POLL_S):
                    if process.poll() is not None:
                        break
                return True, connection.recv()
            except (EOFError, OSError):
                dead = self._process
                self._process, self._connection = None, None
                return False, _wait(dead) if dead is not None else None

    def _call(self, request: GenerateRequest) -> Completion:
        mode = self.engine_mode
        started = time.perf_counter()
        alive, answer = self._send("generate", request)
        if alive:
            assert isinstance(answer, Completion)
            return replace(answer, engine_mode=mode)
        if self._closing:  # stopped by close() after Ctrl-C: not a crash, and nobody records it
            return Completion(text="", error="engine stopped", engine_mode=mode)
        code = answer if isinstance(answer, int) else None
        return self._crashed(code, mode, time.perf_counter() - started)

    def _read(self, request: LikelihoodRequest) -> Likelihood:
        mode = self.engine_mode
        started = time.perf_counter()
        alive, answer = self._send("likelihood", request)
        if alive:
            assert isinstance(answer, Likelihood)
            return answer
        if self._closing:
            return Likelihood(error="engine stopped")
        code = answer if isinstance(answer, int) else None
        crashed = self._crashed(code, mode, time.perf_counter() - started)
        return Likelihood(latency_s=crashed.latency_s, error=crashed.error)

    def _send(self, operation: str, request: object) -> tuple[bool, object]:
        """One call's exchange with the worker (stopping the run after ``max_crashes`` in a row)."""
        if self.crashes_in_a_row >= self.max_crashes:
            raise EngineCrashed(
                f"the local engine crashed {self.crashes_in_a_row} times in a row; see the error rows"
            )
        alive, answer = self._exchange(operation, request)
        if alive:
            self.crashes_in_a_row = 0
        return alive, answer

    def _crashed(self, code: int | None, mode: str | None, latency_s: float) -> Completion:
        self.crashes += 1
        self.crashes_in_a_row += 1
        cause = "an unknown cause" if code is None else signal_name(code)
        where = f" ({mode})" if mode else ""
        error = f"engine crashed: the worker died with {cause}{where} while evaluating this prompt"
        fallback = None
        if code is not None and -code in NATIVE_FAULTS and isinstance(self.engine, FallbackEngine):
            # A native fault is what a safer mode can avoid; an OOM kill (SIGKILL), a SIGTERM or
            # a Python error is not, and must not turn the safe mode on for later runs.
            fallback = self.engine.fallback(f"crashed with {cause}")
        if fallback is not None:
            self.notice(f"the {self.model_id.split('/')[0]} engine crashed with {cause}; {fallback}")
        elif self.crashes_in_a_row < self.max_crashes:
            self.notice(
                f"the local engine crashed with {cause}; restarting it "
                f"(crash {self.crashes_in_a_row} in a row of at most {self.max_crashes})"
            )
        return Completion(text="", latency_s=latency_s, error=error, engine_mode=mode)

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """The engine's reading of the answer's likelihood, in the worker (its KV cache is there)."""
        try:
            return await asyncio.to_thread(self._read, request)
        except asyncio.CancelledError:
            self._closing = True
            if self._process is not None:
                self._process.kill()
            raise

    async def generate(self, request: GenerateRequest) -> Completion:
        try:
            return await asyncio.to_thread(self._call, request)
        except asyncio.CancelledError:
            # Ctrl-C: asyncio would wait for the thread, i.e. for the whole prefill, before the
            # run could stop. Ending the worker ends the call now; nobody records it.
            self._closing = True
            if self._process is not None:
                self._process.kill()
            raise

    def clear_cache(self) -> None:
        """Forget the engine's cache: the worker's KV cache lives in the worker."""
        if self._process is not None:
            self._exchange("clear_cache", None)

    def _stop(self) -> None:
        process, connection = self._process, self._connection
        self._process, self._connection = None, None
        if process is None:
            return
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.send(("stop", None))
            connection.close()
        try:
            process.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        """Stop the worker. A call still waiting in another thread (after Ctrl-C) gets an error."""
        self._closing = True
        process = self._process
        if process is not None and self._lock.locked():
            process.kill()  # a call is in flight: do not wait for it to finish
        self._stop()


def _wait(process: subprocess.Popen[bytes]) -> int | None:
    """The dead worker's return code (negative: the signal that killed it)."""
    try:
        return process.wait(_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()  # it closed its end but lives on: end it
        process.wait()
        return None


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
