"""Engine speeds measured on this machine by ``rotscope doctor``, kept in the user's cache folder
per machine and model file, so ``rotscope run --dry-run`` can estimate a local run's time and the
llama.cpp backend can use the thread count that prefilled fastest here at its batch."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from rotscope._util.cache_dir import user_cache_dir

SPEED_FILE = "engine-speed.json"
BATCH_CANDIDATES = (128, 256, 512)
"""The batch sizes doctor times. They gave identical replies on all 72 calls of the frozen quick
grid (examples/quick-v1.yaml, bundled model, 1 thread); still, the batch is part of a run's
identity and never chosen for it, doctor only reports a faster one. 2,048 prefilled slower on 2
cores (``benchmarks/engine_settings.py``)."""
DEFAULT_BATCH = 256

Setting = tuple[int, int]
"""Threads and batch size (``n_batch`` and ``n_ubatch``)."""


class SpeedEntry(TypedDict):
    """A ``Speed`` as the speed cache stores it."""

    prefill_tps: float
    decode_tps: float
    threads: int
    mode: str
    cpus: int
    n_batch: int
    prefill_by_setting: dict[str, float]


@dataclass(frozen=True)
class Speed:
    """Measured on this machine with the bundled model: prompt tokens/s, generated tokens/s, with
    ``threads`` threads and batch ``n_batch`` (the fastest of ``prefill_by_setting``), when this
    process could use ``cpus`` CPUs."""

    prefill_tps: float
    decode_tps: float
    threads: int
    mode: str
    cpus: int = 0
    """The CPUs this process could use when it was measured; 0 in entries from before tuning."""
    n_batch: int = DEFAULT_BATCH
    prefill_by_setting: dict[Setting, float] = field(default_factory=dict)
    """Each candidate (threads, batch)'s prompt tokens/s; empty in entries from before tuning."""

    def tuned(self, cpus: int, threads: int | None = None, n_batch: int | None = None) -> Setting | None:
        """The fastest setting measured with ``cpus`` CPUs usable, as now (a container or affinity
        that changed since makes it another machine's), among those with ``threads`` and ``n_batch``
        where they are given (set by the user); ``None`` where nothing was measured here."""
        if not self.prefill_by_setting or self.cpus != cpus:
            return None
        fits = {
            setting: tps
            for setting, tps in self.prefill_by_setting.items()
            if threads in (None, setting[0]) and n_batch in (None, setting[1]) and setting[0] <= cpus
        }
        if fits:
            return fastest(fits)
        return (threads or self.threads, n_batch or self.n_batch)

    def prefill_at(self, setting: Setting) -> float:
        """The prompt tokens/s measured with ``setting``, else the fastest measured."""
        return self.prefill_by_setting.get(setting, self.prefill_tps)

    def to_json(self) -> SpeedEntry:
        return {
            "prefill_tps": self.prefill_tps,
            "decode_tps": self.decode_tps,
            "threads": self.threads,
            "mode": self.mode,
            "cpus": self.cpus,
            "n_batch": self.n_batch,
            "prefill_by_setting": {f"{t}x{b}": tps for (t, b), tps in self.prefill_by_setting.items()},
        }


def fastest(prefill_by_setting: dict[Setting, float]) -> Setting:
    """The setting that prefilled fastest; on a tie the fewer threads, then the smaller batch."""
    return max(
        prefill_by_setting, key=lambda setting: (prefill_by_setting[setting], -setting[0], -setting[1])
    )


def speed_cache_path() -> Path:
    return user_cache_dir() / SPEED_FILE


def remembered_speed(key: str) -> Speed | None:
    """The speed ``doctor`` measured for this machine and model file, if it did."""
    try:
        entry = json.loads(speed_cache_path().read_text(encoding="utf-8")).get(key)
        settings = {}
        for name, tps in (entry.get("prefill_by_setting") or {}).items():
            threads, _, batch = name.partition("x")
            settings[(int(threads), int(batch))] = float(tps)
        return Speed(
            float(entry["prefill_tps"]),
            float(entry["decode_tps"]),
            int(entry["threads"]),
            str(entry["mode"]),
            int(entry.get("cpus", 0)),
            int(entry.get("n_batch", DEFAULT_BATCH)),
            settings,
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def remember_speed(key: str, speed: Speed) -> None:
    path = speed_cache_path()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    entries[key] = speed.to_json()
    with contextlib.suppress(OSError):  # the cache-folder check reports it
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
