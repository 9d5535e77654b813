"""The keeper of one ``cmd/`` call: ``python -I -S contain.py STATUS_FD PARENT_PID GRACE_S -- ARGV...``.

It is run as a script (standard library only, no rotscope import), once per call, between rotscope
and the command. It makes itself a **child subreaper** (``PR_SET_CHILD_SUBREAPER``), starts the
command in a process group of its own and waits for it. Because it is a subreaper, every process
the command starts that loses its parent is re-parented to this keeper and not to init: a
background child (``sleep 30 &``), and also a double-forked ``setsid`` daemon, which has left the
command's process group and session and so escapes any ``killpg``. When the command exits, the
keeper kills its group and then, round after round, every child it has (each kill re-parents that
child's own children to it) until it has none; only then does it exit. So the call ends when the
command exits, not when a background child closes the standard output the command shared with
it, and nothing the command started outlives the call.

Why a subreaper, not the alternatives: a cgroup would also hold every descendant, but creating
one needs a delegated cgroup v2 tree that an ordinary user (a container, CI) usually lacks; a kill
of the command's process group and session misses exactly the processes that called ``setsid``.
A subreaper needs no privilege (Linux 3.4 on) and is exact: the keeper is a fresh process per
call, so its children are that call's processes and no other call's. Where ``prctl`` or ``/proc``
is missing (not Linux) the keeper still kills the command's group, which is what remains.

Signals: SIGTERM (a timeout) gives the command's group SIGTERM and ``GRACE_S`` to exit, then kills
everything; SIGHUP (a cancelled call, Ctrl-C) kills everything at once. The keeper asks for SIGHUP
when rotscope dies (``PR_SET_PDEATHSIG``, even by SIGKILL) and also checks that its parent is still
``PARENT_PID`` twice a second, as the death signal follows the thread that started it, not the
process. It writes the command's end to ``STATUS_FD``: ``exit N``, ``signal N`` or
``cannot-run ERRNO MESSAGE``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.5
WATCHED = (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP)


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the group kill is what remains
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def children() -> list[int]:
    """The keeper's living and zombie children, read from ``/proc`` (empty where there is none)."""
    me = os.getpid()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def sweep(group: int) -> None:
    """Kill the command's group and every child of the keeper, until no child is left."""
    while True:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
        for pid in children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        reaped = False
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                reaped = True
        except ChildProcessError:
            return
        if not reaped:
            time.sleep(0.005)


def _end(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit {os.waitstatus_to_exitcode(status)}"


def _wait(command: int, parent: int, until: float | None) -> tuple[int | None, int | None]:
    """Wait for the command's end, reaping orphans meanwhile: (its wait status or ``None``, the
    signal that stopped the wait or ``None``); ``until`` bounds the wait (a monotonic time)."""
    while True:
        timeout = POLL_S if until is None else max(0.0, min(POLL_S, until - time.monotonic()))
        info = signal.sigtimedwait(WATCHED, timeout)
        if info is not None and info.si_signo != signal.SIGCHLD:
            return None, info.si_signo
        try:
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == command:
                    return status, None
        except ChildProcessError:
            return None, None
        if os.getppid() != parent:
            return None, signal.SIGHUP
        if until is not None and time.monotonic() >= until:
            return None, None


def main(argv: list[str]) -> int:
    status_fd, parent, grace_s = int(argv[1]), int(argv[2]), float(argv[3])
    command_argv = argv[5:]
    os.set_inheritable(status_fd, False)
    original_mask = signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGHUP)
    if os.getppid() != parent:  # rotscope died before the death signal was asked for
        return 1
    read_end, write_end = os.pipe()  # the child reports a failed exec through it
    os.set_inheritable(write_end, False)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            os.setpgid(0, 0)
            for number in (signal.SIGPIPE, signal.SIGXFSZ):  # what Python ignores, a command expects
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, original_mask)
            os.execv(command_argv[0], command_argv)
        except OSError as error:
            os.write(write_end, f"cannot-run {error.errno} {error.strerror}".encode())
        os._exit(127)
    os.close(write_end)
    with contextlib.suppress(OSError):  # the child did it already, or has exited
        os.setpgid(pid, pid)
    failed = os.read(read_end, 4096)
    os.close(read_end)
    status, stop = _wait(pid, parent, None)
    if stop == signal.SIGTERM:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGTERM)
        status, _ = _wait(pid, parent, time.monotonic() + grace_s)
    sweep(pid)
    if failed:
        report = failed.decode(errors="replace")
    elif status is not None:
        report = _end(status)
    else:
        report = f"signal {signal.SIGKILL.value}"
    with contextlib.suppress(OSError):
        os.write(status_fd, report.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
