"""How fast a run goes against what its engine should reach: the time left on the run's cumulative
rate (steady from the first quarter on, where a rate over the last few seconds jumps with each
prompt's length and with other work on the machine), and one notice, early, when the machine is far
slower than its reference (``SpeedReference``: the bundled model on the reference machine, or what
``rotscope doctor`` measured here), with the load average and the run's time at this pace.

The reference is a prefill speed and the run's rate counts the prompt tokens the engine had to
evaluate (those its cache did not hold) per second of wall time, decoding and waiting included: the
run reads a little slower than the reference on an idle machine, so only a run below
``1 / SLOW_FACTOR`` of it is called slow.
"""

from __future__ import annotations

import os

from rotscope._util.cpus import usable_cpus
from rotscope.types import Completion, SpeedReference

SLOW_FACTOR = 2.0
"""A run evaluating prompt tokens this many times slower than the reference is on a slow machine."""
FIRST_LOOK_S = 20.0
"""The earliest the run judges its speed: a first call also loads the model and warms its cache."""


def duration(seconds: float) -> str:
    """``1m10s``, ``2h05m``, ``40s``: a short time without control characters."""
    whole = max(round(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def time_left(tokens_done: int, tokens_total: int, elapsed_s: float) -> float | None:
    """Seconds left at the run's cumulative rate of prompt tokens; ``None`` before the first token."""
    if tokens_done <= 0 or tokens_total <= 0:
        return None
    return max(tokens_total - tokens_done, 0) * elapsed_s / tokens_done


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


class SlowMachine:
    """Watches a run's evaluated prompt tokens and says once, from ``FIRST_LOOK_S`` on, when they
    come ``SLOW_FACTOR`` times slower than ``reference``; silent without a reference."""

    def __init__(self, reference: SpeedReference | None) -> None:
        self.reference = reference
        self.evaluated_tokens = 0
        self.said = False

    def record(self, completion: Completion) -> None:
        if completion.error is None:
            self.evaluated_tokens += max(completion.prompt_tokens - (completion.cached_tokens or 0), 0)

    def check(
        self, elapsed_s: float, tokens_done: int, tokens_total: int, items_total: int = 1
    ) -> str | None:
        """The notice, the first time the run is slow (``tokens_*``: prompt tokens, for its time;
        ``items_total``: the calls they come in). Before any call has finished, the first one is
        judged by its own size: a prompt of thousands of tokens takes the reference engine more than
        ``FIRST_LOOK_S`` alone, so silence that long is slow only past ``SLOW_FACTOR`` times the
        reference's time for a mean prompt, after the model's load."""
        reference = self.reference
        if reference is None or self.said or elapsed_s < FIRST_LOOK_S:
            return None
        if self.evaluated_tokens == 0:
            first_call_s = tokens_total / max(items_total, 1) / reference.prefill_tps
            if elapsed_s < FIRST_LOOK_S + SLOW_FACTOR * first_call_s:
                return None
        rate = self.evaluated_tokens / elapsed_s
        if rate * SLOW_FACTOR >= reference.prefill_tps:
            return None
        self.said = True
        return slow_notice(
            rate,
            reference,
            load_average(),
            len(usable_cpus()),
            time_left(tokens_done, tokens_total, elapsed_s),
            elapsed_s,
        )


def slow_notice(
    rate_tps: float,
    reference: SpeedReference,
    load: float | None,
    cpus: int,
    left_s: float | None,
    elapsed_s: float,
) -> str:
    """``slow machine: 40 prompt tokens/s, 6x slower than 240 (...); load average 4.1 on 2 CPUs ...``."""
    if rate_tps > 0:
        measured = f"{rate_tps:,.0f} prompt tokens/s, {reference.prefill_tps / rate_tps:,.0f}x slower than"
    else:
        measured = f"no prompt evaluated in {duration(elapsed_s)}, against"
    busy = "" if load is None else f"; load average {load:.1f} on {cpus} CPUs"
    if load is not None and load > cpus:
        busy += " (other work holds the CPUs)"
    total = (
        "no estimate of the run's time yet"
        if left_s is None
        else f"at this pace the run takes about {duration(elapsed_s + left_s)} in all"
    )
    return f"slow machine: {measured} {reference.prefill_tps:,.0f} ({reference.source}){busy}; {total}"
