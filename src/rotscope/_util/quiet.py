"""Silence C libraries (llama.cpp) that write to file descriptor 2 behind Python's back, and their
Python log callbacks that write to ``sys.stderr`` (which has no descriptor under a test's runner)."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr


@contextmanager
def quiet_stderr() -> Iterator[None]:
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        with redirect_stderr(io.StringIO()):
            yield
        return
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    with open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), stderr_fd)
        try:
            yield
        finally:
            os.dup2(saved, stderr_fd)
            os.close(saved)
