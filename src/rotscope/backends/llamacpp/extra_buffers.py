"""Whether llama.cpp's extra weight buffers (the CPU repack and, on Intel CPUs with AMX, the AMX
buffer) are safe on this machine, decided by measurement.

On CPUs that report AMX, llama.cpp repacks the weights into its AMX buffer type and the AMX matrix
multiply crashes (SIGSEGV) on the first batch of more than one token (llama.cpp issue 20824). Loading
with ``use_extra_bufts = False`` avoids it. So the first load of a model file on a machine runs a
probe in a child process: load with extra buffers on, prefill two multi-token batches. A crash
there costs nothing but the child; its verdict is remembered per llama-cpp-python version, CPU
flags and model file in the user's cache folder, so the probe runs once per machine and model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from rotscope._util.cache_dir import user_cache_dir

ExtraBuffers = Literal["auto", "on", "off"]
PROBE_FILE = "engine-probe.json"
PROBE_TIMEOUT_S = 300
_BUFFER_LINE = re.compile(r"load_tensors:\s+(\S+) model buffer size")
_PLAIN_BUFFERS = {"CPU", "CPU_Mapped"}


@dataclass(frozen=True)
class Verdict:
    """The outcome of one probe: ``safe`` means extra buffers may be used on this machine."""

    safe: bool
    reason: str
    buffer_types: tuple[str, ...] = ()
    """The extra buffer types llama.cpp put weights in during the probe (``CPU_REPACK``, ``AMX``)."""
    probed_at: str = ""


def signal_name(returncode: int) -> str:
    """``SIGSEGV`` for a process killed by signal 11 (a negative return code), else ``exit N``."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit {returncode}"


def cpu_flags() -> str:
    """The CPU's feature flags as the kernel reports them (x86 ``flags``, Arm ``Features``)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return " ".join(sorted(value.split()))
    return platform.processor()


def cpu_has_amx() -> bool:
    return any(flag.startswith("amx") for flag in cpu_flags().split())


def probe_key(model_digest: str) -> str:
    """One verdict per llama-cpp-python version, CPU (machine and feature flags) and model file."""
    from importlib.metadata import version

    cpu = hashlib.sha256(f"{platform.machine()} {cpu_flags()}".encode()).hexdigest()[:16]
    return f"llama-cpp-python {version('llama-cpp-python')} | cpu {cpu} | model {model_digest}"


def probe_cache_path() -> Path:
    """``$XDG_CACHE_HOME/rotscope/engine-probe.json`` (``~/.cache`` when the variable is unset)."""
    return user_cache_dir() / PROBE_FILE


def _read_cache(path: Path) -> dict[str, dict[str, object]]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def remembered(key: str) -> Verdict | None:
    entry = _read_cache(probe_cache_path()).get(key)
    if not isinstance(entry, dict):
        return None
    buffers = entry.get("buffer_types")
    if "safe" not in entry or "reason" not in entry:
        return None
    return Verdict(
        safe=bool(entry["safe"]),
        reason=str(entry["reason"]),
        buffer_types=tuple(str(name) for name in buffers) if isinstance(buffers, list) else (),
        probed_at=str(entry.get("probed_at", "")),
    )


def remember(key: str, verdict: Verdict) -> None:
    """Store a verdict; a cache folder that cannot be written only means the probe runs again."""
    path = probe_cache_path()
    entries = _read_cache(path)
    entries[key] = asdict(verdict)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(path)


def probe_command(model_path: Path) -> list[str]:
    return [sys.executable, "-m", "rotscope.backends.llamacpp.extra_buffers", str(model_path)]


def run_probe(command: Sequence[str]) -> Verdict:
    """Run a probe child and read its verdict: a child killed by a signal means unsafe."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return Verdict(False, f"the probe did not finish in {PROBE_TIMEOUT_S} s", probed_at=stamp)
    buffers = tuple(sorted({m.group(1) for m in _BUFFER_LINE.finditer(done.stderr)} - _PLAIN_BUFFERS))
    if done.returncode == 0:
        return Verdict(True, "a two-batch prefill with extra buffers ran", buffers, stamp)
    last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "")
    reason = f"the probe crashed with {signal_name(done.returncode)}"
    if done.returncode > 0 and last:
        reason += f": {last[:200]}"
    return Verdict(False, reason, buffers, stamp)


def extra_buffers_verdict(model_path: Path, model_digest: str) -> Verdict:
    """The remembered verdict for this machine and model file, probing once when there is none."""
    key = probe_key(model_digest)
    known = remembered(key)
    if known is not None:
        return known
    verdict = run_probe(probe_command(model_path))
    remember(key, verdict)
    return verdict


def mark_unsafe(model_digest: str, reason: str) -> None:
    """Remember that extra buffers crashed the engine here, so later runs start in safe mode."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    remember(probe_key(model_digest), Verdict(False, reason, probed_at=stamp))


@contextlib.contextmanager
def extra_buffers_set(enabled: bool) -> Iterator[None]:
    """Load llama.cpp models with ``use_extra_bufts`` as given. llama-cpp-python takes no argument
    for it, so its default model parameters are wrapped while a model loads (one load at a time:
    the engine owns its process)."""
    import llama_cpp.llama_cpp as native

    original = native.llama_model_default_params

    def with_choice() -> object:
        params = original()
        params.use_extra_bufts = enabled
        return params

    native.llama_model_default_params = with_choice
    try:
        yield
    finally:
        native.llama_model_default_params = original


def _probe(model_path: str) -> None:
    """The child's side: load with extra buffers on and prefill two batches of several tokens."""
    from llama_cpp import Llama

    with extra_buffers_set(True):
        llama = Llama(model_path=model_path, n_ctx=256, n_batch=32, n_ubatch=32, verbose=True)
    ids = llama.tokenize(b"The lantern by the harbor gate was lit at dusk, as every evening. " * 4)
    llama.eval(ids[:80])
    llama.close()


if __name__ == "__main__":
    _probe(sys.argv[1])
