"""One replica's health in a ``serve/NAME`` pool: its calls, its failed calls, the failures in a row
that take it out of the pool (``serve.unhealthy_after``), and when it may be probed again
(``serve.probe_after_s``, doubled each time it is taken out). Counting only, no I/O: the backend
decides what a failure is and when a probe answers."""

from __future__ import annotations

from dataclasses import dataclass, field

from rotscope.run_meta import ReplicaHealth as HealthRecord
from rotscope.run_meta import ReplicaTakenOut as TakenOut


@dataclass
class Health:
    """A replica's counts. ``calls`` counts every call sent to it (a call moved to it from a failing
    replica included), ``failures`` those that failed for a fault of the replica."""

    probe_after_s: float
    calls: int = 0
    failures: int = 0
    in_a_row: int = 0
    last_fault: str | None = None
    probe_at: float | None = None
    """When a probe may put the replica back (``None``: it is in the pool)."""
    outs: list[TakenOut] = field(default_factory=list)

    def record(self, fault: str | None) -> None:
        """One call's outcome: ``None`` answered, else the replica's fault in a few words."""
        self.calls += 1
        if fault is None:
            self.in_a_row = 0
            return
        self.failures += 1
        self.in_a_row += 1
        self.last_fault = fault

    def take_out(self, reason: str, now: float, since: float) -> None:
        """Out of the pool until ``probe_at``; each time taken out, the wait doubles."""
        wait = self.probe_after_s * 2 ** len(self.outs)
        self.probe_at = now + wait
        after_s = round(now - since, 3)
        self.outs.append({"call": self.calls, "after_s": after_s, "reason": reason, "back": False})

    def due(self, now: float) -> bool:
        return self.probe_at is not None and now >= self.probe_at

    def put_back(self) -> None:
        self.probe_at = None
        self.in_a_row = 0
        if self.outs:
            self.outs[-1]["back"] = True

    def record_of(self, url: str) -> HealthRecord:
        return {"replica": url, "calls": self.calls, "failures": self.failures, "taken_out": list(self.outs)}


def health_line(record: HealthRecord) -> str:
    """``http://b:8000: 12 calls, 7 failed, taken out after its 8th call (3 failed in a row, the last:
    HTTP 500 ...)``, the words the run's notice and summary use."""
    words = f"{record['replica']}: {record['calls']} calls, {record['failures']} failed"
    for out in record["taken_out"]:
        words += f", taken out after call {out['call']} ({out['reason']})"
        if out["back"]:
            words += ", back after a probe"
    return words


__all__ = ["Health", "health_line"]
