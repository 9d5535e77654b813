"""The canary's checks: one check (its probes, those a killed run of it left out; the sequential
test; the stored alert body) and the loop of checks at an interval, with its signal handling: the
first SIGINT or SIGTERM stops after the check in flight, a second abandons it (the next run takes
it up where it stopped, since each probe is its own transaction)."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType

from rotscope.errors import BadInput
from rotscope.monitor.canary import store as canary_store
from rotscope.monitor.canary.alert import alert_body
from rotscope.monitor.canary.probes import Canary, Probe, ProbeResult, check_probes, run_probes
from rotscope.monitor.canary.record import CanaryAlert
from rotscope.monitor.sequential import Margins, sequential_test
from rotscope.monitor.store import MonitorStore

_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)(s|m|h|d)")
_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


MAX_CALLS_PER_CHECK = 10_000
"""The most probe calls one check may make: a check's calls are planned, sent and stored at once
(``--calls 1000000000000`` would never return), and 10,000 already puts ~1,100 probes in each of
9 bins."""
MIN_INTERVAL_S = 0.01
"""The shortest interval between checks (10 ms; a check waits for the one before it, so a shorter
one only spins)."""
MAX_INTERVAL_S = 366 * 86400.0
"""The longest interval between checks (a year): beyond it a loop is a typo, not a schedule."""
MAX_CHECKS = 1_000_000
"""The most checks one loop may be asked for (``--max-checks``)."""


def loop_settings(calls: int, every: str | None, max_checks: int | None) -> float | None:
    """The canary's loop settings checked against their bounds: the interval in seconds (``None``:
    one check), or bad input naming the option. ``--max-checks`` without ``--every`` is refused,
    not ignored: one check is all that runs without a loop."""
    if not 1 <= calls <= MAX_CALLS_PER_CHECK:
        raise BadInput(f"--calls: from 1 to {MAX_CALLS_PER_CHECK:,} probe calls per check, not {calls:,}")
    if max_checks is not None:
        if every is None:
            raise BadInput("--max-checks: only with --every (without it, one check runs)")
        if not 1 <= max_checks <= MAX_CHECKS:
            raise BadInput(f"--max-checks: from 1 to {MAX_CHECKS:,}, not {max_checks:,}")
    if every is None:
        return None
    interval_s = parse_every(every)
    if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
        raise BadInput(f"--every: {every!r} is outside 0.01s to 366d")
    return interval_s


def parse_every(value: str) -> float:
    """``1h``, ``30m``, ``90s``, ``1d`` (or ``1h30m``) in seconds; bad input otherwise."""
    parts = _INTERVAL.findall(value.strip())
    if not parts or "".join(number + unit for number, unit in parts) != value.strip():
        raise BadInput(f"--every: {value!r} is not an interval such as 1h, 30m or 90s")
    seconds = sum(float(number) * _SECONDS[unit] for number, unit in parts)
    if seconds <= 0:
        raise BadInput(f"--every: {value!r} must be longer than nothing")
    return seconds


def run_check(canary: Canary, store: MonitorStore, margins: Margins) -> CanaryAlert:
    """One check: its probes (those a killed run of it left out), the test, the stored body (the
    record ``canary``, validated as it is built, before it is stored: what a scheduler reads is
    what it documents)."""
    # a canary on the likelihood is a series of its own (its probes score another thing)
    key = f"{canary.baseline_run}|{canary.subject}" + ("|likelihood" if canary.score == "likelihood" else "")
    settings = {"bins": canary.bins, "calls": canary.calls, "warn": margins.warn, "fail": margins.fail}
    settings["alpha"] = margins.alpha
    number_id = canary_store.open_canary(store, key, str(canary.baseline_dir), canary.subject, settings)
    number, _resumed = canary_store.next_check(store, number_id)
    canary_store.start_check(store, number_id, number)
    probes = check_probes(canary, number)
    stored = canary_store.stored_slots(store, number_id, number)

    def record(probe: Probe, result: ProbeResult) -> None:
        canary_store.add_probe(
            store,
            number_id,
            number,
            canary_store.ProbeRecord(
                probe.slot, probe.bin, probe.candidate.key, probe.candidate.baseline, result.score,
                result.outcome, result.response, result.error,
            ),
        )  # fmt: skip

    run_probes(canary, [probe for probe in probes if probe.slot not in stored], record)
    verdict = sequential_test(canary_store.scored_probes(store, number_id, number), canary.bins, margins)
    body = alert_body(
        verdict,
        check=number,
        at=datetime.now(UTC).isoformat(timespec="seconds"),
        subject=canary.subject,
        baseline=str(canary.baseline_dir),
        margins=margins,
        probes=len(probes),
        errors=canary_store.probe_errors(store, number_id, number),
    )
    if canary.score != "accuracy":  # the key stays out of an accuracy canary's body, as before
        body = body.model_copy(update={"score": canary.score})
    canary_store.finish_check(store, number_id, number, verdict.status, body)
    return body


def check_loop(
    check: Callable[[], CanaryAlert | None],
    show: Callable[[CanaryAlert], None],
    interval_s: float,
    max_checks: int | None,
    notice: Callable[[str], None],
) -> None:
    """``check`` every ``interval_s`` seconds until a signal (or ``max_checks`` checks), ``show``
    each body. ``check`` returns None when a second signal abandoned it."""
    stop = threading.Event()

    def asked_to_stop(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():  # a second signal: abandon the check in flight
            raise KeyboardInterrupt
        stop.set()
        notice("stopping after the check in flight (again to stop at once)")

    previous = {sig: signal.signal(sig, asked_to_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    done = 0
    try:
        while not stop.is_set():
            started = time.monotonic()
            body = check()
            if body is None:
                notice("check abandoned; the next run takes it up where it stopped")
                break
            show(body)
            done += 1
            if max_checks is not None and done >= max_checks:
                break
            stop.wait(max(0.0, interval_s - (time.monotonic() - started)))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
