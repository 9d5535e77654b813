"""A replica's health counts: failures in a row reset by an answer, the wait before a probe doubled
each time the replica is taken out, and the words the run's notice uses."""

from __future__ import annotations

from rotscope.backends.serve.health import Health, health_line


def test_an_answer_resets_the_failures_in_a_row_but_not_the_counts() -> None:
    health = Health(probe_after_s=10.0)
    for fault in ("HTTP 500", None, "HTTP 500", "HTTP 502"):
        health.record(fault)
    assert (health.calls, health.failures, health.in_a_row, health.last_fault) == (4, 3, 2, "HTTP 502")


def test_the_wait_before_a_probe_doubles_each_time_the_replica_is_taken_out() -> None:
    health = Health(probe_after_s=10.0)
    health.record("no answer")
    health.take_out("1 failed call", now=105.0, since=100.0)
    assert not health.due(114.9) and health.due(115.0)
    health.put_back()
    assert health.probe_at is None and health.in_a_row == 0 and health.outs[0]["back"] is True
    health.take_out("again", now=200.0, since=100.0)
    assert not health.due(219.9) and health.due(220.0)
    assert health.outs[1] == {"call": 1, "after_s": 100.0, "reason": "again", "back": False}


def test_the_line_names_calls_failures_and_each_removal() -> None:
    health = Health(probe_after_s=1.0)
    for _ in range(3):
        health.record("HTTP 500")
    health.take_out("3 failed calls in a row, the last: HTTP 500", now=1.0, since=0.0)
    assert health_line(health.record_of("http://b:8000")) == (
        "http://b:8000: 3 calls, 3 failed, taken out after call 3 "
        "(3 failed calls in a row, the last: HTTP 500)"
    )
