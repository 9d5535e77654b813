"""One run of an outside command, contained: nothing it started outlives the call.

The command runs under a keeper (``contain.py``, whose docstring says how and why: a child
subreaper per call), in a process group of its own. The call ends when the command exits; what it
left running in the background is killed then, double-forked daemons included, so a background
child holding the standard output open cannot delay the reply. A command that overruns its time
gets SIGTERM, then SIGKILL after a grace; a cancelled call (Ctrl-C, SIGTERM of rotscope) kills
everything at once; and if rotscope itself is killed, the keeper kills everything on its own.

The standard output is read up to ``max_output_bytes``; past it the call stops at once and is
marked ``over_limit`` (the caller makes it an error row), so a runaway reply costs bounded memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KILL_GRACE_S = 2.0
"""How long a timed-out command has between SIGTERM and SIGKILL to end itself."""
KEEPER_END_S = 30.0
"""How long a keeper told SIGHUP has to kill what its command started and exit (it takes
milliseconds; only a machine in trouble comes near this). Past it the keeper is killed."""
KEEPER = Path(__file__).with_name("contain.py")
STDERR_KEPT_BYTES = 64 * 1024
"""Only the end of the standard error is kept (an error row shows its last few hundred characters)."""
_READ_BYTES = 1 << 16
_LIVE: set[int] = set()
"""The keepers running now (their pids), for ``stop_all``."""


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes
    over_limit: bool = False
    """The standard output passed ``max_output_bytes``: ``stdout`` is its first bytes only."""


class TimedOut(Exception):
    """The command ran past its time; it and everything it started have been killed."""


def stop_all() -> None:
    """Every running call's keeper told to kill its command at once (the process is ending)."""
    for keeper in list(_LIVE):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(keeper, signal.SIGHUP)


async def run_in_group(
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str],
    cwd: str,
    timeout_s: float,
    pass_fds: Sequence[int] = (),
    max_output_bytes: int | None = None,
) -> Finished:
    """Run ``argv`` to its end or its timeout. ``stdin`` ``None`` gives it an empty input. Raises
    ``TimedOut``, or ``OSError`` when it cannot be started; a cancelled call kills it."""
    status_read, status_write = os.pipe()
    try:
        keeper = [sys.executable, "-I", "-S", str(KEEPER), str(status_write), str(os.getpid())]
        process = await _spawn(
            [*keeper, f"{KILL_GRACE_S:g}", "--", *argv],
            stdin=stdin is not None,
            env=env,
            cwd=cwd,
            pass_fds=(*pass_fds, status_write),
        )
    finally:
        os.close(status_write)
    _LIVE.add(process.pid)
    try:
        try:
            stdout, over_limit, stderr = await asyncio.wait_for(
                _communicate(process, stdin, max_output_bytes), timeout_s
            )
        except TimeoutError:
            await _stop(process, signal.SIGTERM, KILL_GRACE_S + 2.0)
            raise TimedOut(f"timed out after {timeout_s:g} s (it and what it started were killed)") from None
        if over_limit:
            # Read on, discarding, while it stops: a pipe nobody reads is paused by asyncio's flow
            # control, its end of file never seen, and ``wait()`` waits for the pipes to close.
            draining = [asyncio.ensure_future(_discard(pipe)) for pipe in (process.stdout, process.stderr)]
            try:
                await _stop(process, signal.SIGHUP, KEEPER_END_S)
            finally:
                for task in draining:
                    task.cancel()
        else:
            await process.wait()
        return Finished(_returncode(status_read, process.returncode), stdout, stderr, over_limit)
    finally:
        if process.returncode is None:
            await _stop_despite_cancel(process)
        _LIVE.discard(process.pid)
        os.close(status_read)


async def _discard(stream: asyncio.StreamReader | None) -> None:
    """Read ``stream`` to its end, keeping nothing."""
    if stream is not None:
        while await stream.read(_READ_BYTES):
            pass


async def _communicate(
    process: asyncio.subprocess.Process, stdin: bytes | None, max_output_bytes: int | None
) -> tuple[bytes, bool, bytes]:
    """The standard output (up to the limit, and whether it passed it) and the end of the standard
    error, read until both close; the input written meanwhile."""

    async def feed() -> None:
        if process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if stdin:
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.close()

    async def read_stdout() -> tuple[bytes, bool]:
        assert process.stdout is not None
        kept = bytearray()
        while block := await process.stdout.read(_READ_BYTES):
            if max_output_bytes is not None and len(kept) + len(block) > max_output_bytes:
                kept += block[: max_output_bytes - len(kept)]
                return bytes(kept), True
            kept += block
        return bytes(kept), False

    async def read_stderr() -> bytes:
        assert process.stderr is not None
        kept = bytearray()
        while block := await process.stderr.read(_READ_BYTES):
            kept += block
            del kept[:-STDERR_KEPT_BYTES]
        return bytes(kept)

    feeding = asyncio.ensure_future(feed())
    stderr_task = asyncio.ensure_future(read_stderr())
    try:
        stdout, over_limit = await read_stdout()
        if over_limit:
            return stdout, True, b""
        stderr = await stderr_task
        await feeding
        return stdout, False, stderr
    finally:
        for task in (feeding, stderr_task):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _spawn(
    argv: Sequence[str], *, stdin: bool, env: Mapping[str, str], cwd: str, pass_fds: Sequence[int]
) -> asyncio.subprocess.Process:
    """The keeper started, its pipes connected; a cancellation meanwhile lets the start finish,
    stops the keeper as a cancelled call does, then goes on.

    Not cancellable midway on purpose: a cancellation inside ``create_subprocess_exec`` (Python 3.11:
    while its pipes connect, which a starved event loop can make last until the command runs) makes
    asyncio SIGKILL the keeper alone, so it cannot sweep; the command and what it started, in a
    process group of their own, live on holding the pipes, and asyncio then waits for those pipes
    to close, for ever (issue 33: SIGTERM of rotscope under CPU contention)."""
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            pass_fds=pass_fds,
            start_new_session=True,  # out of the terminal's group: Ctrl-C is rotscope's to handle
        )
    )
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(asyncio.CancelledError):  # cancelled again: this one is raised below
            await _despite_cancel(spawning)
        if not spawning.cancelled() and spawning.exception() is None:
            process = spawning.result()
            _LIVE.add(process.pid)
            try:
                await _stop_despite_cancel(process)
            finally:
                _LIVE.discard(process.pid)
        raise


async def _despite_cancel(task: asyncio.Future[Any]) -> None:
    """Wait for ``task`` to end even if the caller is cancelled meanwhile; a cancellation that came
    is raised once it has ended (never lost: a lost one would let a stopped call retry)."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


async def _stop_despite_cancel(process: asyncio.subprocess.Process) -> None:
    """``_stop`` at once (SIGHUP), waited for to its end even if the call is cancelled again."""
    await _despite_cancel(asyncio.ensure_future(_stop(process, signal.SIGHUP, KEEPER_END_S)))


async def _stop(process: asyncio.subprocess.Process, signum: signal.Signals, wait_s: float) -> None:
    """Tell the keeper to stop its command (SIGTERM: with a grace; SIGHUP: at once) and wait for it.

    A keeper past ``wait_s`` after SIGTERM is told SIGHUP; one past ``KEEPER_END_S`` after SIGHUP
    is killed as a last resort, and not waited for: killed, it can no longer end what its command
    started, and asyncio would wait for ever on the pipes those processes hold."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signum)
    try:
        await asyncio.wait_for(process.wait(), wait_s)
        return
    except TimeoutError:
        pass
    if signum != signal.SIGHUP:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGHUP)
        try:
            await asyncio.wait_for(process.wait(), KEEPER_END_S)
            return
        except TimeoutError:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(process.pid, signal.SIGKILL)


def _returncode(status_read: int, keeper_returncode: int | None) -> int:
    """The command's exit status as ``subprocess`` gives it (negative: killed by that signal), from
    the keeper's report; ``OSError`` when the command could not be started."""
    os.set_blocking(status_read, False)
    try:
        report = os.read(status_read, 4096).decode(errors="replace")
    except BlockingIOError:
        report = ""
    kind, _, rest = report.partition(" ")
    if kind == "exit":
        return int(rest)
    if kind == "signal":
        return -int(rest)
    if kind == "cannot-run":
        number, _, message = rest.partition(" ")
        raise OSError(int(number), message)
    return keeper_returncode if keeper_returncode is not None else -1
