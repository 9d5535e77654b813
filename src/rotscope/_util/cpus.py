"""The CPUs this process may run on, and how many physical cores they are.

``os.cpu_count()`` counts the machine's CPUs, not the ones a container, ``taskset`` or a Ray
worker's affinity leaves this process; an engine with more threads than those waits on itself.
On SMT machines two CPUs of one core share its arithmetic units, so llama.cpp's prefill is often
as fast or faster with one thread per physical core.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_PROCESSOR = re.compile(r"^processor\s*:\s*(\d+)", re.M)


def usable_cpus() -> frozenset[int]:
    """The CPU numbers this process may run on (its affinity), all CPUs where that is unknown."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return frozenset(range(os.cpu_count() or 1))


def physical_cores(cpus: frozenset[int], cpuinfo: str) -> int:
    """How many physical cores ``cpus`` span, from ``/proc/cpuinfo``'s text (``physical id`` and
    ``core id`` per processor); ``len(cpus)`` where the file does not say."""
    cores = set()
    for block in cpuinfo.split("\n\n"):
        number = _PROCESSOR.search(block)
        if number is None or int(number.group(1)) not in cpus:
            continue
        fields = dict(re.findall(r"^(physical id|core id)\s*:\s*(\d+)", block, re.M))
        if len(fields) < 2:
            return len(cpus)
        cores.add((fields["physical id"], fields["core id"]))
    return len(cores) or len(cpus)


def thread_candidates(cpus: frozenset[int] | None = None, cpuinfo: str | None = None) -> tuple[int, ...]:
    """The thread counts worth timing here: one per usable CPU, and one per physical core when
    that is fewer (SMT), most threads first."""
    cpus = usable_cpus() if cpus is None else cpus
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    return tuple(sorted({len(cpus), physical_cores(cpus, cpuinfo)}, reverse=True))
