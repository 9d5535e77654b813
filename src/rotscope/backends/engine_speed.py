"""Engine speeds measured on this machine by ``rotscope doctor``, kept in the user's cache folder
per machine and model file, so ``rotscope run --dry-run`` can estimate a local run's time and the
llama.cpp backend can use the thread count that prefilled fastest here."""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rotscope._util.cache_dir import user_cache_dir

SPEED_FILE = "engine-speed.json"


@dataclass(frozen=True)
class Speed:
    """Measured on this machine with the bundled model: prompt tokens/s, generated tokens/s, with
    ``threads`` threads (the fastest of ``prefill_by_threads``, each candidate's prompt tokens/s),
    when this process could use ``cpus`` CPUs."""

    prefill_tps: float
    decode_tps: float
    threads: int
    mode: str
    cpus: int = 0
    """The CPUs this process could use when it was measured; 0 in entries from before tuning."""
    prefill_by_threads: dict[int, float] = field(default_factory=dict)
    """Each candidate thread count's prompt tokens/s; empty in entries from before tuning."""

    def tuned_threads(self, cpus: int) -> int | None:
        """The fastest thread count, when it was measured with ``cpus`` CPUs usable, as now (a
        container or affinity that changed since makes the measurement another machine's)."""
        if not self.prefill_by_threads or self.cpus != cpus or self.threads > cpus:
            return None
        return self.threads

    def prefill_at(self, threads: int) -> float:
        """The prompt tokens/s measured with ``threads`` threads, else the fastest measured."""
        return self.prefill_by_threads.get(threads, self.prefill_tps)


def fastest(prefill_by_threads: dict[int, float]) -> int:
    """The thread count that prefilled fastest; on a tie the fewer threads."""
    return max(prefill_by_threads, key=lambda threads: (prefill_by_threads[threads], -threads))


def speed_cache_path() -> Path:
    return user_cache_dir() / SPEED_FILE


def remembered_speed(key: str) -> Speed | None:
    """The speed ``doctor`` measured for this machine and model file, if it did."""
    try:
        entry = json.loads(speed_cache_path().read_text(encoding="utf-8")).get(key)
        by_threads = entry.get("prefill_by_threads") or {}
        return Speed(
            float(entry["prefill_tps"]),
            float(entry["decode_tps"]),
            int(entry["threads"]),
            str(entry["mode"]),
            int(entry.get("cpus", 0)),
            {int(threads): float(tps) for threads, tps in by_threads.items()},
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def remember_speed(key: str, speed: Speed) -> None:
    path = speed_cache_path()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    entries[key] = asdict(speed)
    with contextlib.suppress(OSError):  # the cache-folder check reports it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
