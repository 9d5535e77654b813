"""The run's pace (issue 53, item 1): the time left on the cumulative rate, and one notice, early,
when the machine evaluates prompts far slower than its reference."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import cast

import pytest

from rotscope.report import pace
from rotscope.report.pace import FIRST_LOOK_S, SlowMachine, slow_notice, time_left
from rotscope.report.progress import PlainProgress
from rotscope.types import Completion, SpeedReference, WorkItem

REFERENCE = SpeedReference(240.0, "the bundled model on an idle 2-core AMD EPYC")


def _item(tokens: int) -> WorkItem:
    return cast(WorkItem, SimpleNamespace(prompt=SimpleNamespace(prompt_tokens=tokens)))


def test_time_left_is_the_cumulative_rate_over_what_remains() -> None:
    assert time_left(0, 1000, 5.0) is None
    assert time_left(250, 1000, 10.0) == pytest.approx(30.0)
    assert time_left(1000, 1000, 40.0) == 0.0


def test_a_run_near_its_reference_is_not_called_slow_and_a_slow_one_is_called_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pace, "load_average", lambda: 4.2)
    steady = SlowMachine(REFERENCE)
    steady.record(Completion(text="", prompt_tokens=3000, cached_tokens=0))
    assert steady.check(FIRST_LOOK_S - 1, 3000, 12000) is None  # too early to judge
    assert steady.check(20.0, 3000, 12000) is None  # 150 tokens/s: within SLOW_FACTOR of 240

    slow = SlowMachine(REFERENCE)
    # a cached prefix costs nothing: only the 1,000 evaluated tokens count, 40 per second
    slow.record(Completion(text="", prompt_tokens=3000, cached_tokens=2000))
    slow.record(Completion(text="", error="engine crashed", prompt_tokens=5000))  # an error evaluates nothing
    notice = slow.check(25.0, 3000, 12000)
    assert notice is not None
    assert notice.startswith("slow machine: 40 prompt tokens/s, 6x slower than 240 (the bundled model")
    assert "load average 4.2 on" in notice
    assert notice.endswith("at this pace the run takes about 1m40s in all")
    assert slow.check(30.0, 3000, 12000) is None  # said once


def test_no_reference_no_notice_and_a_stalled_first_call_is_named() -> None:
    assert SlowMachine(None).check(600.0, 0, 100) is None
    stalled = SlowMachine(REFERENCE)
    notice = stalled.check(45.0, 0, 12000, items_total=10)  # 1,200 tokens a call: 5 s at 240 tokens/s
    assert notice is not None and "no prompt evaluated in 45s, against 240" in notice
    assert notice.endswith("; no estimate of the run's time yet")


def test_a_first_call_of_thousands_of_tokens_is_given_its_time_before_the_machine_is_called_slow() -> None:
    # 48 calls of 2,560 tokens: the reference evaluates the first in about 10.7 s, so silence until
    # FIRST_LOOK_S + SLOW_FACTOR x 10.7 s is the reference's own pace, not a slow machine
    first_call_s = 2560 / 240
    waiting = SlowMachine(REFERENCE)
    assert waiting.check(FIRST_LOOK_S + 1.9 * first_call_s, 0, 48 * 2560, items_total=48) is None
    notice = waiting.check(FIRST_LOOK_S + 2.1 * first_call_s, 0, 48 * 2560, items_total=48)
    assert notice is not None and notice.startswith("slow machine: no prompt evaluated in")


def test_the_notice_names_a_machine_that_other_work_holds() -> None:
    text = slow_notice(20.0, REFERENCE, 5.0, 2, 100.0, 50.0)
    assert "load average 5.0 on 2 CPUs (other work holds the CPUs)" in text
    assert "(other work" not in slow_notice(20.0, REFERENCE, 1.0, 2, 100.0, 50.0)


def test_the_plain_progress_prints_the_notice_once_among_its_lines() -> None:
    now = [1000.0]
    stream = io.StringIO()
    progress = PlainProgress(stream, interval_s=3600, clock=lambda: now[0])
    progress.expect(REFERENCE)
    progress.start(40, 40 * 500)
    for _ in range(40):
        now[0] += 12.5  # 500 evaluated tokens each 12.5 s: 40 tokens/s
        progress.advance(_item(500), Completion(text="", prompt_tokens=500, cached_tokens=0))
    progress.finish()
    notices = [line for line in stream.getvalue().splitlines() if line.startswith("slow machine:")]
    assert len(notices) == 1, stream.getvalue()
    assert "40 prompt tokens/s, 6x slower than 240" in notices[0]
    assert "at this pace the run takes about 8m20s in all" in notices[0]
