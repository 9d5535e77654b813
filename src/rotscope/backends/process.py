"""One run of an outside command in a process group of its own, so that nothing it started outlives
the call: a command that overruns its time is stopped with its whole group (SIGTERM, then SIGKILL
after a grace), and whatever it left running in the background when it exited is killed too."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KILL_GRACE_S = 2.0
"""How long a timed-out command has between SIGTERM and SIGKILL to end itself."""


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


class TimedOut(Exception):
    """The command ran past its time; its process group has been killed."""


async def run_in_group(
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str],
    cwd: str,
    timeout_s: float,
    pass_fds: Sequence[int] = (),
) -> Finished:
    """Run ``argv`` to its end or its timeout. ``stdin`` ``None`` gives it an empty input. Raises
    ``TimedOut``, or ``OSError`` when it cannot be started; a cancelled call (Ctrl-C) kills it."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        pass_fds=tuple(pass_fds),
        start_new_session=True,  # its own session and process group, whose id is its pid
    )
    group = process.pid
    try:
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(stdin), timeout_s)
        except TimeoutError:
            _signal_group(group, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), KILL_GRACE_S)
            raise TimedOut(f"timed out after {timeout_s:g} s (its process group was killed)") from None
        return Finished(process.returncode if process.returncode is not None else -1, stdout, stderr)
    finally:
        _signal_group(group, signal.SIGKILL)  # what it left behind, or what ignored SIGTERM
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.shield(process.wait())


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)
