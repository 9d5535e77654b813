"""The run's progress: a bar on a terminal (items done, prompt tokens per second, time left), and
plain lines where stdout is a file, a pipe or a CI log."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from rotscope._util.safe_text import terminal_safe
from rotscope.report.pace import SlowMachine, WorkTally, duration
from rotscope.types import Completion, SpeedReference, WorkItem

PLAIN_INTERVAL_S = 30.0
"""Outside a terminal, the longest wait between two progress lines."""


def progress_reporter(console: Console) -> ProgressBar | PlainProgress:
    """The bar on a terminal, plain lines (``PlainProgress``) anywhere else (both ``Reporter``s)."""
    if console.is_terminal:
        return ProgressBar(console)
    return PlainProgress(console.file)


class ProgressBar:
    """A ``runner.Reporter``; time left is estimated on the prompt tokens the engine evaluates, which
    dominate local cost, at the run's cumulative rate (``pace.WorkTally``); a slow machine is named
    once (``pace.SlowMachine``)."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]items {task.fields[items]}"),
            BarColumn(),
            TextColumn("{task.fields[rate]} prompt tok/s"),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("{task.fields[left]}"),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task("run", total=1, rate="-", errors=0, items="0/0", left="")
        self._tally = WorkTally(0, 0)
        self._started = time.perf_counter()
        self._slow = SlowMachine(None)
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None

    def expect(self, reference: SpeedReference | None) -> None:
        """The speed this run's engine should reach (before ``start``)."""
        self._slow = SlowMachine(reference)

    def start(self, items: int, prompt_tokens: int, prefill: Mapping[str, int] | None = None) -> None:
        self._tally = tally = WorkTally(items, prompt_tokens, prefill)
        self._started = time.perf_counter()
        total = max(tally.work_total, 1)
        self._progress.update(self._task, total=total, completed=0, items=f"0/{items}", left="")
        self._progress.start()
        self._stop = stop = threading.Event()
        threading.Thread(target=self._tick, args=(stop,), daemon=True, name="pace").start()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        with self._lock:
            tally = self._tally
            tally.add(item, completion)
            elapsed = max(time.perf_counter() - self._started, 1e-9)
            self._slow.record(completion, elapsed)
            left = tally.left_s(elapsed)
            done, items = tally.work_done, f"{tally.items_done}/{tally.items_total}"
            rate, errors = f"{tally.rate(elapsed):,.0f}", tally.errors
        self._progress.update(
            self._task,
            completed=done,
            items=items,
            rate=rate,
            errors=errors,
            left="" if left is None else f"{duration(left)} left",
        )
        self._check()

    def _check(self) -> None:
        with self._lock:
            elapsed = time.perf_counter() - self._started
            tally = self._tally
            message = self._slow.check(elapsed, tally.left_s(elapsed), tally.first_call_tokens())
        if message is not None:
            self.notice(message)

    def _tick(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            self._check()

    def finish(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        self._progress.stop()

    def notice(self, message: str) -> None:
        self._progress.console.print(terminal_safe(message), markup=False, highlight=False, soft_wrap=True)


class PlainProgress:
    """A ``runner.Reporter`` for a log: one plain line (no ANSI, no carriage return) such as
    ``12/48 items (25%), 0 errors, 277 prompt tok/s, ETA 1m10s`` at every tenth of the items and,
    while calls are slow, at least every ``interval_s`` seconds (a background thread), ending with
    the 100% line, each written whole and flushed to ``stream``; ``clock`` is injectable for tests."""

    def __init__(
        self,
        stream: IO[str],
        interval_s: float = PLAIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._writing = threading.Lock()
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tally = WorkTally(0, 0)
        self._started = clock()
        self._last_line = self._started
        self._next_tenth = 1
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._slow = SlowMachine(None)

    def expect(self, reference: SpeedReference | None) -> None:
        """The speed this run's engine should reach (before ``start``)."""
        self._slow = SlowMachine(reference)

    def start(self, items: int, prompt_tokens: int, prefill: Mapping[str, int] | None = None) -> None:
        with self._lock:
            self._tally = tally = WorkTally(items, prompt_tokens, prefill)
            self._next_tenth = 1
            self._started = self._last_line = self._clock()
        self._emit(f"{items} items to run, {prompt_tokens:,} prompt tokens{tally.cached_note()}")
        stop = threading.Event()
        self._stop = stop
        self._thread = threading.Thread(target=self._tick, args=(stop,), daemon=True, name="progress")
        self._thread.start()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        with self._lock:
            tally = self._tally
            tally.add(item, completion)
            self._slow.record(completion, self._clock() - self._started)
            total = max(tally.items_total, 1)
            due = tally.items_done * 10 >= self._next_tenth * total
            while self._next_tenth * total <= tally.items_done * 10:
                self._next_tenth += 1
            line = self._line() if due or self._clock() - self._last_line >= self._interval_s else None
        if line is not None:
            self._emit(line)
        self._check_pace()

    def _check_pace(self) -> None:
        with self._lock:
            elapsed = self._clock() - self._started
            tally = self._tally
            message = self._slow.check(elapsed, tally.left_s(elapsed), tally.first_call_tokens())
        if message is not None:
            self.notice(message)

    def finish(self) -> None:
        stop, thread = self._stop, self._thread
        self._stop = self._thread = None
        if stop is not None:
            stop.set()
        if thread is not None:
            thread.join()

    def notice(self, message: str) -> None:
        self._emit(terminal_safe(message))

    def _tick(self, stop: threading.Event) -> None:
        while not stop.wait(min(self._interval_s, 1.0)):
            with self._lock:
                quiet = self._clock() - self._last_line >= self._interval_s
                line = self._line() if quiet and self._tally.items_done < self._tally.items_total else None
            if line is not None:
                self._emit(line)
            self._check_pace()

    def _line(self) -> str:
        """The line of now; the lock is held."""
        now = self._clock()
        self._last_line = now
        elapsed = max(now - self._started, 1e-9)
        tally = self._tally
        total = tally.items_total
        percent = 100 * tally.items_done // total if total else 100
        if tally.items_done >= total:
            eta = "done"
        elif (left := tally.left_s(elapsed)) is not None:
            eta = "ETA " + duration(left)
        else:
            eta = "ETA unknown"
        errors = "1 error" if tally.errors == 1 else f"{tally.errors} errors"
        return (
            f"{tally.items_done}/{total} items ({percent}%), {errors}, {tally.rate(elapsed):,.0f} prompt "
            f"tok/s, {duration(elapsed)} elapsed, {eta}"
        )

    def _emit(self, line: str) -> None:
        try:
            with self._writing:
                self._stream.write(line + "\n")
                self._stream.flush()
        except (BrokenPipeError, ValueError):  # a closed log: progress is not worth failing a run
            pass
