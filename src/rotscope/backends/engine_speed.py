"""Engine speeds measured on this machine by ``rotscope doctor``, kept in the user's cache folder
per machine and model file, so ``rotscope run --dry-run`` can estimate a local run's time."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from rotscope._util.cache_dir import user_cache_dir

SPEED_FILE = "engine-speed.json"


@dataclass(frozen=True)
class Speed:
    """Measured on this machine with the bundled model: prompt tokens/s, generated tokens/s."""

    prefill_tps: float
    decode_tps: float
    threads: int
    mode: str


def speed_cache_path() -> Path:
    return user_cache_dir() / SPEED_FILE


def remembered_speed(key: str) -> Speed | None:
    """The speed ``doctor`` measured for this machine and model file, if it did."""
    try:
        entry = json.loads(speed_cache_path().read_text(encoding="utf-8")).get(key)
        return Speed(
            float(entry["prefill_tps"]), float(entry["decode_tps"]), int(entry["threads"]), str(entry["mode"])
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def remember_speed(key: str, speed: Speed) -> None:
    path = speed_cache_path()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    entries[key] = speed.__dict__
    with contextlib.suppress(OSError):  # the cache-folder check reports it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
