"""How fast a run goes against what its engine should reach: the time left on the run's cumulative
rate of work (steady from the first quarter on, where a rate over the last few seconds jumps with
each prompt's length and with other work on the machine), and one notice, early, when the machine is
far slower than its reference (``SpeedReference``: the bundled model on the reference machine, or
what ``rotscope doctor`` measured here), with the load average and the run's time at this pace.

Work is counted in the prompt tokens the engine is expected to evaluate (a local engine keeps the
prefix the previous prompt shares: ``plan.schedule.expected_prefill``) plus ``CALL_TOKENS`` for
each call's decoding: counted on every prompt token, the time left of a run in prefix order runs
long until its end, because its later calls find most of their prompt cached
(``benchmarks/results/quick_physical.md``).

The notice compares the time the calls took, to the end of the last one finished, with the time the
reference needs for the same prompt tokens evaluated and tokens generated: judged at a call's end,
so a long call still running does not read as a slow machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rotscope._util.cpus import usable_cpus
from rotscope.types import Completion, SpeedReference, WorkItem

SLOW_FACTOR = 2.0
"""A run whose calls take this many times the reference's time for their work is on a slow machine
(the reference does not count loading the model, reading likelihoods or the run's own bookkeeping)."""
CALL_TOKENS = 32
"""A call's decoding and bookkeeping, counted as this many prompt tokens of work for the time left
(a short answer's decoding takes the reference engine about as long as prefilling 32 tokens)."""
FIRST_LOOK_S = 20.0
"""The earliest the run judges its speed: a first call also loads the model and warms its cache."""
JUDGED_WORK_S = 3.0
"""The least work, in the reference's seconds, the notice judges the calls' time on: below it the
model's load and the first call's start weigh more than the machine."""


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


class WorkTally:
    """A batch's calls and work, done and in all: each call's expected evaluated prompt tokens
    (``prefill``, by item id; without it, all its prompt tokens) plus ``CALL_TOKENS``."""

    def __init__(self, items: int, prompt_tokens: int, prefill: Mapping[str, int] | None = None) -> None:
        self.items_total = items
        self.prompt_tokens = prompt_tokens
        self.prefill = prefill
        self.evaluated_total = prompt_tokens if prefill is None else sum(prefill.values())
        self.items_done = self.evaluated_done = self.errors = 0

    def add(self, item: WorkItem, completion: Completion) -> None:
        self.items_done += 1
        self.errors += completion.error is not None
        tokens = item.prompt.prompt_tokens
        self.evaluated_done += tokens if self.prefill is None else self.prefill.get(item.item_id, tokens)

    @property
    def work_total(self) -> int:
        return self.evaluated_total + CALL_TOKENS * self.items_total

    @property
    def work_done(self) -> int:
        return self.evaluated_done + CALL_TOKENS * self.items_done

    def rate(self, elapsed_s: float) -> float:
        """Prompt tokens evaluated a second (as expected for the calls done)."""
        return self.evaluated_done / max(elapsed_s, 1e-9)

    def left_s(self, elapsed_s: float) -> float | None:
        return time_left(self.work_done, self.work_total, elapsed_s)

    def first_call_tokens(self) -> float:
        """A mean call's prompt tokens: the first call finds nothing cached."""
        return self.prompt_tokens / max(self.items_total, 1)

    def cached_note(self) -> str:
        """``, 15,299 to evaluate (...)`` where the engine is expected to keep shared prefixes."""
        if self.evaluated_total >= self.prompt_tokens:
            return ""
        return f", {self.evaluated_total:,} to evaluate (the engine keeps the prefixes they share)"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


class SlowMachine:
    """Watches a run's finished calls and says once, from ``FIRST_LOOK_S`` on, when they took
    ``SLOW_FACTOR`` times the reference's time for their work; silent without a reference."""

    def __init__(self, reference: SpeedReference | None) -> None:
        self.reference = reference
        self.evaluated_tokens = 0
        self.generated_tokens = 0
        self.last_done_s = 0.0
        self.said = False

    def record(self, completion: Completion, elapsed_s: float) -> None:
        """A call that finished ``elapsed_s`` after the run started."""
        if completion.error is None:
            self.evaluated_tokens += max(completion.prompt_tokens - (completion.cached_tokens or 0), 0)
            self.generated_tokens += max(completion.completion_tokens, 0)
            self.last_done_s = max(self.last_done_s, elapsed_s)

    def reference_s(self) -> float:
        """Seconds the reference engine needs for the finished calls' evaluated and generated tokens."""
        reference = self.reference
        if reference is None:
            return 0.0
        seconds = self.evaluated_tokens / reference.prefill_tps
        if reference.decode_tps:
            seconds += self.generated_tokens / reference.decode_tps
        return seconds

    def check(self, elapsed_s: float, left_s: float | None, first_call_tokens: float) -> str | None:
        """The notice, the first time the run is slow (``left_s``: the run's time left, for its
        total; ``first_call_tokens``: the prompt tokens of a mean call). Before any call has
        finished, the first one is judged by its own size: a prompt of thousands of tokens takes the
        reference engine more than ``FIRST_LOOK_S`` alone, so silence that long is slow only past
        ``SLOW_FACTOR`` times the reference's time for a mean call, after the model's load."""
        reference = self.reference
        if reference is None or self.said or elapsed_s < FIRST_LOOK_S:
            return None
        if self.evaluated_tokens == 0:
            if elapsed_s < FIRST_LOOK_S + SLOW_FACTOR * first_call_tokens / reference.prefill_tps:
                return None
            rate, slower = 0.0, None
        else:
            needed = self.reference_s()
            if needed < JUDGED_WORK_S or self.last_done_s <= SLOW_FACTOR * needed:
                return None
            rate, slower = self.evaluated_tokens / self.last_done_s, self.last_done_s / needed
        self.said = True
        return slow_notice(rate, reference, load_average(), len(usable_cpus()), left_s, elapsed_s, slower)


def slow_notice(
    rate_tps: float,
    reference: SpeedReference,
    load: float | None,
    cpus: int,
    left_s: float | None,
    elapsed_s: float,
    slower: float | None = None,
) -> str:
    """``slow machine: 40 prompt tokens/s, 6x slower than 240 (...); load average 4.1 on 2 CPUs ...``:
    ``slower`` is the calls' time over the reference's for the same work (by default the rates')."""
    if rate_tps > 0:
        factor = slower if slower is not None else reference.prefill_tps / rate_tps
        measured = f"{rate_tps:,.0f} prompt tokens/s, {factor:,.0f}x slower than"
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
