"""The command that continues a run folder, as every message prints it: the folder quoted for a
POSIX shell (``shlex.quote``), so a name with spaces or quotes is copied and pasted as it is."""

from __future__ import annotations

import shlex
from pathlib import Path


def resume_command(folder: Path | str, options: str = "") -> str:
    """``rotscope run --resume 'DIR'`` (and ``options`` after it, as given)."""
    tail = f" {options.strip()}" if options.strip() else ""
    return f"rotscope run --resume {shlex.quote(str(folder))}{tail}"


def out_option(folder: Path | str) -> str:
    """``--out 'DIR'``: the option that runs a command again into the same folder."""
    return f"--out {shlex.quote(str(folder))}"
