"""Harness overheads measured on a run's first call, kept in the user's cache folder per command
and options, so ``rotscope run --dry-run`` can warn before a run whose planned lengths plus the
overhead would not fit the window.

The dry run calls no model, so it cannot probe: it reads what the latest run of the same command
(the same executable file, arguments and tokenizer) measured. A command never run has no entry."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rotscope._util.cache_dir import user_cache_dir

OVERHEAD_FILE = "harness-overhead.json"


def overhead_cache_path() -> Path:
    return user_cache_dir() / OVERHEAD_FILE


def overhead_key(description: Mapping[str, Any]) -> str:
    """The model id and a digest of everything its backend's ``describe()`` reports."""
    digest = hashlib.sha256(json.dumps(description, sort_keys=True, default=str).encode()).hexdigest()
    return f"{description.get('model')}@{digest[:16]}"


def remembered_overhead(key: str) -> int | None:
    """The overhead the latest run of this command measured on its first call, if one did."""
    try:
        return int(json.loads(overhead_cache_path().read_text(encoding="utf-8"))[key]["tokens"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def remember_overhead(key: str, tokens: int) -> None:
    path = overhead_cache_path()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    if not isinstance(entries, dict):
        entries = {}
    entries[key] = {"tokens": tokens}
    with contextlib.suppress(OSError):  # a measurement is a convenience: the run goes on without it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
