"""A reader that stops reading (``rotscope export DIR | head -1``) ends the command quietly: no
message, the status a shell gives a process killed by SIGPIPE (141), through a real pipeline."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from rotscope.cli import EXIT_BROKEN_PIPE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
ROTSCOPE = Path(sys.executable).parent / "rotscope"


@pytest.fixture()
def long_run(tmp_path: Path) -> Path:
    run_dir = Path(shutil.copytree(FIXTURES / "v1-lexical", tmp_path / "run"))
    with closing(sqlite3.connect(run_dir / "run.db")) as db, db:
        db.execute("UPDATE items SET response = ?", ("long reply " * 5000,))  # far more than a pipe holds
    return run_dir


@pytest.mark.parametrize("args", [["export"], ["export", "--format", "jsonl"], ["show"]])
def test_a_closed_stdout_pipe_ends_the_command_quietly(long_run: Path, args: list[str]) -> None:
    command = " ".join([str(ROTSCOPE), args[0], str(long_run), *args[1:]])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True, timeout=120
    )
    # show writes little: it may finish before head closes the pipe (0) or meet the closed pipe (141).
    expected = {0, EXIT_BROKEN_PIPE} if args == ["show"] else {EXIT_BROKEN_PIPE}
    assert done.returncode in expected, (done.returncode, done.stderr)
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1
    assert EXIT_BROKEN_PIPE == 141
