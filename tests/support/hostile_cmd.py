"""A ``cmd/`` command that tries to outlive its run, and the checks that it did not (shared by
tests/flows/test_cmd_containment.py and benchmarks/cmd_containment.py).

Each call of the command records its own pid, starts a background ``sleep`` and a double-forked
``setsid`` daemon (which leaves the command's process group and session), records their pids too,
then hangs. Every process carries ``MARK`` in its environment, so ``/proc`` finds any of them even
if a pid was never recorded. ``interrupt`` runs rotscope on it, sends a signal once calls are in
flight and reports what is left 5 s after rotscope exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import yaml

ROTSCOPE = Path(sys.executable).with_name("rotscope")
MARK = "ROTSCOPE_HOSTILE_MARK"
CALLS_IN_FLIGHT = 2
SETTLE_S = 5.0
DAEMON = """
import os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
with open(sys.argv[1], "a") as pids:
    pids.write(f"{os.getpid()}\\n")
time.sleep(600)
"""


def write_command(folder: Path) -> Path:
    """The hostile command, in ``folder``; its first argument is the file its pids go to."""
    daemon = folder / "daemon.py"
    daemon.write_text(DAEMON, encoding="utf-8")
    script = folder / "hostile.sh"
    script.write_text(
        "#!/bin/sh\n"
        'echo $$ >> "$1"\n'
        "sleep 600 &\n"
        'echo $! >> "$1"\n'
        f'"{sys.executable}" "{daemon}" "$1"\n'
        "cat > /dev/null\n"
        "sleep 600\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def write_experiment(folder: Path, command: Path, pids: Path) -> Path:
    path = folder / "experiment.yaml"
    experiment = {
        "name": "hostile",
        "model": f"cmd/{command}",
        "tasks": ["niah"],
        "lengths": [256],
        "depths": ["beginning", "end"],
        "limit": 2,
        "controls": False,
        "cmd": {"args": [str(pids)], "env": [MARK], "timeout_s": 300, "max_attempts": 1},
        "limits": {"cmd": {"concurrency": 4}},
    }
    path.write_text(yaml.safe_dump(experiment), encoding="utf-8")
    return path


def marked_processes(mark: str) -> list[int]:
    """Living processes (zombies aside) whose environment holds ``MARK=mark``, read from ``/proc``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and state[state.rfind(b")") + 2 :][:1] != b"Z":
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return state[state.rfind(b")") + 2 :][:1] != b"Z"


def temp_folders(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob("rotscope-cmd-*"))


@dataclass
class Outcome:
    returncode: int
    recorded_pids: list[int]
    left_recorded: list[int]
    left_marked: list[int]
    temp_left: list[Path]
    stderr: str
    exit_s: float
    """Seconds from the signal to rotscope's exit."""


def _read(folder: Path) -> str:
    return (folder / "stderr.txt").read_text(encoding="utf-8", errors="replace")


def interrupt(folder: Path, signum: signal.Signals) -> Outcome:
    """Run rotscope on the hostile command in ``folder``, send ``signum`` once ``CALLS_IN_FLIGHT``
    calls have started all three of their processes, and look once nothing it started lives, or
    ``SETTLE_S`` after it exited."""
    folder.mkdir(parents=True, exist_ok=True)
    tmpdir = folder / "tmp"
    tmpdir.mkdir(exist_ok=True)
    pids = folder / "pids"
    pids.touch()
    experiment = write_experiment(folder, write_command(folder), pids)
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "TMPDIR": str(tmpdir), "PYTHONFAULTHANDLER": "1"}
    # stderr to a file, not a pipe: a pipe's end is held by every process rotscope started until it
    # is gone, so reading it to its end would time rotscope's cleanup, not its exit; what is left
    # alive is judged from /proc below.
    errors = (folder / "stderr.txt").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [str(ROTSCOPE), "run", str(experiment), "--out", str(folder / "run")],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=errors,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if len(pids.read_text().split()) >= 3 * CALLS_IN_FLIGHT:
                break
            time.sleep(0.05)
        if process.poll() is not None:
            raise AssertionError(f"rotscope ended before the signal: {_read(folder)}")
        process.send_signal(signum)
        sent = time.monotonic()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)  # faulthandler prints where it hangs
            process.wait(timeout=10)
            ran = _read(folder)[-4000:]
            raise AssertionError(f"rotscope still ran 60 s after the signal: {ran}") from None
        exit_s = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        errors.close()
    stderr = _read(folder)
    # Looked at until nothing it started lives (nothing marked lives that could start another), at
    # most SETTLE_S: what is left then is what the run left.
    settled = time.monotonic() + SETTLE_S
    while True:
        recorded = [int(pid) for pid in pids.read_text().split()]
        left_recorded = [pid for pid in recorded if alive(pid)]
        left_marked = marked_processes(mark)
        if (not left_recorded and not left_marked) or time.monotonic() >= settled:
            break
        time.sleep(0.05)
    return Outcome(
        returncode=process.returncode,
        recorded_pids=recorded,
        left_recorded=left_recorded,
        left_marked=left_marked,
        temp_left=temp_folders(tmpdir),
        stderr=stderr,
        exit_s=exit_s,
    )


def clean_up(pids: list[int]) -> None:
    """Kill what a failed check left (a test must not leave processes behind for the next)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
