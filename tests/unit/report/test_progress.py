"""Progress outside a terminal (issue 35, item 4): plain lines at every tenth of the items and at
least every interval while calls are slow, no control characters, the 100% line last."""

from __future__ import annotations

import io
import re
import time
from types import SimpleNamespace
from typing import cast

from rich.console import Console

from rotscope.report.progress import PlainProgress, ProgressBar, duration, progress_reporter
from rotscope.types import Completion, WorkItem

LINE = re.compile(
    r"^(\d+)/(\d+) items \((\d+)%\), (\d+) errors?, [\d,]+ prompt tok/s, \S+ elapsed, (ETA \S+|done)$"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _item(tokens: int = 100) -> WorkItem:
    return cast(WorkItem, SimpleNamespace(prompt=SimpleNamespace(prompt_tokens=tokens)))


def _progress_lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if LINE.match(line)]


def test_a_line_at_every_tenth_and_the_last_says_done() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = PlainProgress(stream, interval_s=3600, clock=clock)
    progress.start(48, 4800)
    for number in range(48):
        clock.now += 1.0
        progress.advance(_item(), Completion(text="", error="boom" if number == 3 else None))
    progress.finish()
    lines = _progress_lines(stream)
    assert len(lines) == 10, stream.getvalue()
    percents = [int(LINE.match(line).group(3)) for line in lines]  # type: ignore[union-attr]
    assert percents == sorted(percents) and percents[0] == 10 and percents[-1] == 100
    assert lines[0] == "5/48 items (10%), 1 error, 100 prompt tok/s, 5s elapsed, ETA 43s"
    assert lines[-1] == "48/48 items (100%), 1 error, 100 prompt tok/s, 48s elapsed, done"
    assert stream.getvalue().splitlines()[0] == "48 items to run, 4,800 prompt tokens"
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_slow_calls_still_get_a_line_each_interval() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = PlainProgress(stream, interval_s=30, clock=clock)
    progress.start(1000, 100_000)
    clock.now += 31  # one item per 31 s: far from the next tenth, each finished call is a line
    progress.advance(_item(), Completion(text=""))
    clock.now += 10  # within the interval: no line
    progress.advance(_item(), Completion(text=""))
    progress.finish()
    assert _progress_lines(stream) == ["1/1000 items (0%), 0 errors, 3 prompt tok/s, 31s elapsed, ETA 8h36m"]


def test_a_call_that_takes_longer_than_the_interval_gets_lines_while_it_runs() -> None:
    stream = io.StringIO()
    progress = PlainProgress(stream, interval_s=0.05)
    progress.start(10, 1000)
    time.sleep(0.4)  # no call finishes: the background thread still says where the run is
    progress.finish()
    lines = _progress_lines(stream)
    assert len(lines) >= 2, stream.getvalue()
    assert all(
        line.startswith("0/10 items (0%), 0 errors") and line.endswith("ETA unknown") for line in lines
    )
    after = stream.getvalue()
    time.sleep(0.15)
    assert stream.getvalue() == after  # finished: the thread is gone


def test_notices_are_plain_lines_without_control_characters() -> None:
    stream = io.StringIO()
    PlainProgress(stream).notice("engine \x1b[31mred\x1b[0m\rback")
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()
    assert stream.getvalue().endswith("\n")


def test_a_terminal_gets_the_bar_and_a_file_the_lines() -> None:
    assert isinstance(progress_reporter(Console(file=io.StringIO(), force_terminal=True)), ProgressBar)
    assert isinstance(progress_reporter(Console(file=io.StringIO())), PlainProgress)


def test_durations_are_short() -> None:
    assert [duration(s) for s in (0.4, 40, 70, 3600 * 2 + 300)] == ["0s", "40s", "1m10s", "2h05m"]
