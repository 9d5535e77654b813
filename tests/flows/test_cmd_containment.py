"""Signals to rotscope while ``cmd/`` calls run (tests/support/hostile_cmd.py): afterwards no process the
command started exists (checked through ``/proc``), and no temporary folder of rotscope remains,
except after SIGKILL, when the next run removes them."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rotscope.backends.cmd.backend import clean_stale
from rotscope.backends.cmd.process import run_in_group
from tests.support.hostile_cmd import CALLS_IN_FLIGHT, alive, clean_up, interrupt, temp_folders

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "sigint"]
)
def test_a_stopped_run_ends_every_command_and_removes_its_folders(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    outcome = interrupt(tmp_path, signum)
    clean_up(outcome.left_recorded + outcome.left_marked)
    assert len(outcome.recorded_pids) >= 3 * CALLS_IN_FLIGHT  # each call: itself, a child, a daemon
    assert outcome.left_recorded == [] and outcome.left_marked == []
    assert outcome.temp_left == []
    assert outcome.returncode == code, outcome.stderr
    assert "interrupted:" in outcome.stderr and "Traceback" not in outcome.stderr


def test_a_killed_run_leaves_no_command_and_the_next_run_removes_its_folders(tmp_path: Path) -> None:
    outcome = interrupt(tmp_path, signal.SIGKILL)
    clean_up(outcome.left_recorded + outcome.left_marked)
    assert outcome.returncode == -signal.SIGKILL
    assert len(outcome.recorded_pids) >= 3 * CALLS_IN_FLIGHT
    assert outcome.left_recorded == [] and outcome.left_marked == []
    assert len(outcome.temp_left) >= CALLS_IN_FLIGHT  # nothing could remove them
    removed = clean_stale(tmp_path / "tmp")  # what the next cmd/ run does when it starts
    assert sorted(removed) == outcome.temp_left and temp_folders(tmp_path / "tmp") == []


HANGING = """#!/bin/sh
echo $$ >> "$1"
sleep 600 &
echo $! >> "$1"
sleep 600
"""


def test_a_call_cancelled_while_its_command_starts_ends_it_and_what_it_started(tmp_path: Path) -> None:
    """The cancellation lands inside ``create_subprocess_exec``, before its pipes are connected: the
    event loop is held (as a starved one is) until the command and its child run, then the call is
    cancelled. asyncio's own clean-up there SIGKILLs the keeper alone, which left the command and
    its child running and the call waiting for ever on the pipes they hold (issue 33's SIGTERM hang
    under CPU contention); the call must end promptly with both gone."""
    script = tmp_path / "hang.sh"
    script.write_text(HANGING, encoding="utf-8")
    script.chmod(0o755)
    pids = tmp_path / "pids"
    pids.touch()

    async def cancelled_while_starting() -> tuple[bool, float]:
        call = asyncio.create_task(
            run_in_group(
                [str(script), str(pids)],
                stdin=None,
                env={"PATH": os.environ["PATH"]},
                cwd=str(tmp_path),
                timeout_s=300,
            )
        )
        for _ in range(2):  # the call's task, then the spawn, each one step: the keeper is started
            await asyncio.sleep(0)
        deadline = time.monotonic() + 30
        while len(pids.read_text().split()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # the loop held: the pipes of the call are not connected yet
        call.cancel()
        started = time.monotonic()
        done, _ = await asyncio.wait([call], timeout=15)
        return bool(done) and call.cancelled(), time.monotonic() - started

    ended, took = asyncio.run(cancelled_while_starting())
    recorded = [int(pid) for pid in pids.read_text().split()]
    settled = time.monotonic() + 0.5  # what a kill sent has ended by then
    while (left := [pid for pid in recorded if alive(pid)]) and time.monotonic() < settled:
        time.sleep(0.02)
    clean_up(left)
    assert len(recorded) == 2
    assert ended, f"the cancelled call had not ended {took:.1f} s later"
    assert left == []
