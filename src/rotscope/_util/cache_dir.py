"""The user's cache folder for rotscope (response cache, engine probe verdicts, measured speeds)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rotscope``, or ``~/.cache/rotscope`` when the variable is unset."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "rotscope"
