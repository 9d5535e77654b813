"""One ``cmd/`` call contained (rotscope.backends.cmd.process and its keeper): the reply counts when
the command exits, a double-forked daemon dies with the call, placeholders are filled in one pass,
and a reply over its size is an error row."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from rotscope.backends.cmd import backend as cmd_backend
from rotscope.backends.cmd.backend import CmdBackend
from rotscope.backends.cmd.options import CmdOptions
from rotscope.backends.cmd.process import run_in_group
from rotscope.config.experiment import build_config
from rotscope.types import GenerateRequest, GenerationParams

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return state[state.rfind(b")") + 2 :][:1] != b"Z"


def _gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _run(script: str, cwd: Path, timeout_s: float = 60.0, **options: object) -> tuple[object, float]:
    started = time.monotonic()
    finished = asyncio.run(
        run_in_group(
            ["/bin/sh", "-c", script], stdin=None, env={}, cwd=str(cwd), timeout_s=timeout_s, **options
        )  # type: ignore[arg-type]
    )
    return finished, time.monotonic() - started


def test_the_reply_counts_when_the_command_exits_not_when_its_background_child_closes_stdout(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pid"
    finished, seconds = _run(f"sleep 30 & echo $! > {pidfile}; echo answer", tmp_path, timeout_s=25)
    assert finished.returncode == 0 and finished.stdout == b"answer\n"  # type: ignore[attr-defined]
    assert seconds < 10  # not the background child's 30 s, nor the timeout
    assert _gone(int(pidfile.read_text()))


def test_a_double_forked_setsid_daemon_dies_with_the_call(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    daemon = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "os.close(1); os.close(2)\n"
        "time.sleep(600)\n"
    )
    (tmp_path / "daemon.py").write_text(daemon, encoding="utf-8")
    script = (
        f"{sys.executable} {tmp_path / 'daemon.py'}; while [ ! -s {pidfile} ]; do sleep 0.05; done; echo ok"
    )
    finished, _ = _run(script, tmp_path)
    assert finished.stdout == b"ok\n"  # type: ignore[attr-defined]
    daemon_pid = int(pidfile.read_text())
    assert os.getsid(daemon_pid) != os.getsid(0) if _alive(daemon_pid) else True  # it had left the session
    assert _gone(daemon_pid)


def test_a_command_that_cannot_start_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file"):
        asyncio.run(
            run_in_group([str(tmp_path / "missing")], stdin=None, env={}, cwd=str(tmp_path), timeout_s=30)
        )


def test_the_exit_status_and_the_killing_signal_are_the_commands(tmp_path: Path) -> None:
    assert _run("exit 7", tmp_path)[0].returncode == 7  # type: ignore[attr-defined]
    assert _run("kill -9 $$", tmp_path)[0].returncode == -9  # type: ignore[attr-defined]


def test_output_past_the_limit_stops_the_call_and_is_marked(tmp_path: Path) -> None:
    finished, seconds = _run("yes answer", tmp_path, timeout_s=30, max_output_bytes=100_000)
    assert finished.over_limit and len(finished.stdout) == 100_000  # type: ignore[attr-defined]
    assert seconds < 10


def _request(system: str) -> GenerateRequest:
    messages = ({"role": "system", "content": system}, {"role": "user", "content": "the prompt"})
    return GenerateRequest(messages, (1, 2, 3), GenerationParams())


def test_placeholders_are_filled_in_one_pass(tmp_path: Path) -> None:
    script = tmp_path / "echo.sh"
    script.write_text('#!/bin/sh\nprintf "%s" "$1" > "$(dirname "$0")/argv"\necho reply\n', encoding="utf-8")
    script.chmod(0o755)
    config = build_config(
        {"model": f"cmd/{script}", "cmd": {"args": ["--sys={system}"], "usage": "file", "parts": "split"}}
    )
    backend = CmdBackend(str(script), config.section(CmdOptions))
    completion = asyncio.run(backend.generate(_request("Mind {usage_file} and {prompt_file}.")))
    assert completion.error is None and completion.text == "reply"
    assert (tmp_path / "argv").read_text() == "--sys=Mind {usage_file} and {prompt_file}."


def test_a_reply_over_the_stated_size_is_an_error_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "flood.sh"
    script.write_text("#!/bin/sh\ncat >/dev/null\nyes answer\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setattr(cmd_backend, "MAX_REPLY_BYTES", 50_000)
    config = build_config({"model": f"cmd/{script}", "cmd": {"max_attempts": 1}})
    completion = asyncio.run(CmdBackend(str(script), config.section(CmdOptions)).generate(_request("")))
    assert completion.text == "" and completion.error is not None
    assert "reply over 50000 bytes" in completion.error
