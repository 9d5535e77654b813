"""``rotscope serve-llama`` refuses what it cannot start in one line and exit 2: the server's extras
missing (shadowed here by a ``uvicorn`` that fails to import), a model file that is not there, an
unknown ``--extra-buffers`` value. (The server answering is ``tests/integration/test_serve_llama.py``.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROTSCOPE = Path(sys.executable).parent / "rotscope"


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROTSCOPE), "serve-llama", *args], capture_output=True, text=True, timeout=120, env=env
    )


def _one_line(done: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and lines[0].startswith("rotscope: "), done.stderr
    assert fragment in lines[0], lines[0]


def test_missing_server_extra_is_one_line(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "uvicorn"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named uvicorn')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")]),
    }
    _one_line(_serve("bundled", "--port", "9", env=env), "pip install 'llama-cpp-python[server]'")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("/nowhere/model.gguf", "--port", "9"), "model file /nowhere/model.gguf not found"),
        (("bundled", "--extra-buffers", "maybe"), "--extra-buffers takes auto, on or off"),
    ],
)
def test_bad_arguments_are_one_line(args: tuple[str, ...], fragment: str) -> None:
    _one_line(_serve(*args), fragment)
