"""The run's progress: a bar on a terminal (items done, prompt tokens per second, time left), and
plain lines where stdout is a file, a pipe or a CI log."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from rotscope._util.safe_text import terminal_safe
from rotscope.report.pace import SlowMachine, duration, time_left
from rotscope.types import Completion, SpeedReference, WorkItem

PLAIN_INTERVAL_S = 30.0
"""Outside a terminal, the longest wait between two progress lines."""


def progress_reporter(console: Console) -> ProgressBar | PlainProgress:
    """The bar on a terminal, plain lines (``PlainProgress``) anywhere else (both ``Reporter``s)."""
    if console.is_terminal:
        return ProgressBar(console)
    return PlainProgress(console.file)


class ProgressBar:
    """A ``runner.Reporter``; time left is estimated on prompt tokens, which dominate local cost, at the
    run's cumulative rate (``pace.time_left``); a slow machine is named once (``pace.SlowMachine``)."""

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
        self._items_total = 0
        self._tokens_total = 0
        self._tokens_done = 0
        self._items_done = 0
        self._errors = 0
        self._started = time.perf_counter()
        self._slow = SlowMachine(None)
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None

    def expect(self, reference: SpeedReference | None) -> None:
        """The speed this run's engine should reach (before ``start``)."""
        self._slow = SlowMachine(reference)

    def start(self, items: int, prompt_tokens: int) -> None:
        self._items_total = items
        self._tokens_total = max(prompt_tokens, 1)
        self._items_done = self._tokens_done = self._errors = 0
        self._started = time.perf_counter()
        self._progress.update(self._task, total=self._tokens_total, completed=0, items=f"0/{items}", left="")
        self._progress.start()
        self._stop = stop = threading.Event()
        threading.Thread(target=self._tick, args=(stop,), daemon=True, name="pace").start()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        with self._lock:
            self._items_done += 1
            self._tokens_done += item.prompt.prompt_tokens
            self._errors += completion.error is not None
            self._slow.record(completion)
            elapsed = max(time.perf_counter() - self._started, 1e-9)
            left = time_left(self._tokens_done, self._tokens_total, elapsed)
        self._progress.update(
            self._task,
            completed=self._tokens_done,
            items=f"{self._items_done}/{self._items_total}",
            rate=f"{self._tokens_done / elapsed:,.0f}",
            errors=self._errors,
            left="" if left is None else f"{duration(left)} left",
        )
        self._check()

    def _check(self) -> None:
        with self._lock:
            elapsed = time.perf_counter() - self._started
            message = self._slow.check(elapsed, self._tokens_done, self._tokens_total, self._items_total)
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
        self._items_total = 0
        self._tokens_total = 0
        self._items_done = 0
        self._tokens_done = 0
        self._errors = 0
        self._started = clock()
        self._last_line = self._started
        self._next_tenth = 1
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._slow = SlowMachine(None)

    def expect(self, reference: SpeedReference | None) -> None:
        """The speed this run's engine should reach (before ``start``)."""
        self._slow = SlowMachine(reference)

    def start(self, items: int, prompt_tokens: int) -> None:
        with self._lock:
            self._items_total = items
            self._tokens_total = prompt_tokens
            self._items_done = self._tokens_done = self._errors = 0
            self._next_tenth = 1
            self._started = self._last_line = self._clock()
        self._emit(f"{items} items to run, {prompt_tokens:,} prompt tokens")
        stop = threading.Event()
        self._stop = stop
        self._thread = threading.Thread(target=self._tick, args=(stop,), daemon=True, name="progress")
        self._thread.start()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        with self._lock:
            self._items_done += 1
            self._tokens_done += item.prompt.prompt_tokens
            self._errors += completion.error is not None
            self._slow.record(completion)
            total = max(self._items_total, 1)
            due = self._items_done * 10 >= self._next_tenth * total
            while self._next_tenth * total <= self._items_done * 10:
                self._next_tenth += 1
            line = self._line() if due or self._clock() - self._last_line >= self._interval_s else None
        if line is not None:
            self._emit(line)
        self._check_pace()

    def _check_pace(self) -> None:
        with self._lock:
            elapsed = self._clock() - self._started
            message = self._slow.check(elapsed, self._tokens_done, self._tokens_total, self._items_total)
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
                line = self._line() if quiet and self._items_done < self._items_total else None
            if line is not None:
                self._emit(line)
            self._check_pace()

    def _line(self) -> str:
        """The line of now; the lock is held."""
        now = self._clock()
        self._last_line = now
        elapsed = max(now - self._started, 1e-9)
        total = self._items_total
        percent = 100 * self._items_done // total if total else 100
        rate = self._tokens_done / elapsed
        if self._items_done >= total:
            eta = "done"
        elif (left := time_left(self._tokens_done, self._tokens_total, elapsed)) is not None:
            eta = "ETA " + duration(left)
        else:
            eta = "ETA unknown"
        errors = "1 error" if self._errors == 1 else f"{self._errors} errors"
        return (
            f"{self._items_done}/{total} items ({percent}%), {errors}, {rate:,.0f} prompt tok/s, "
            f"{duration(elapsed)} elapsed, {eta}"
        )

    def _emit(self, line: str) -> None:
        try:
            with self._writing:
                self._stream.write(line + "\n")
                self._stream.flush()
        except (BrokenPipeError, ValueError):  # a closed log: progress is not worth failing a run
            pass
