"""The canary's tables of the monitoring store (migration ``canary`` of ``monitor.store``): a
canary per baseline run and subject, its numbered checks, and every probe as it finishes, one
short transaction each, so a canary and an ingest share the file.

Resumable by construction: a check's probes are keyed by (canary, check number, slot), the probes
of a check are chosen from its number alone, and a check is finished (its status and alert body
written) only after all its probes are stored. A check killed midway is taken up by the next run
under the same number: the probes already stored stay, the others are made, none twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rotscope.errors import BadInput
from rotscope.monitor.canary.record import CanaryAlert
from rotscope.monitor.store import MonitorStore


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ProbeRecord:
    """One probe as stored: the baseline's score of its item and the endpoint's (``None`` when the
    call failed: no score, left out of the test)."""

    slot: int
    bin: str
    item: str
    baseline: float
    score: float | None
    outcome: str | None
    response: str | None
    error: str | None


def open_canary(
    store: MonitorStore, key: str, baseline: str, subject: str, settings: Mapping[str, Any]
) -> int:
    """The canary of ``key`` (its baseline run and subject), made on first use; a rerun whose
    ``settings`` (bins, calls per check, margins) differ from the stored ones is bad input: its
    sequence would not be the one the earlier checks began."""
    db = store.connection
    text = json.dumps(dict(settings), sort_keys=True)
    with db:
        db.execute(
            "INSERT OR IGNORE INTO canaries (key, baseline, subject, settings, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, baseline, subject, text, _now()),
        )
        number, stored = db.execute("SELECT id, settings FROM canaries WHERE key = ?", (key,)).fetchone()
    if stored != text:
        before, now = json.loads(stored), dict(settings)
        changed = ", ".join(sorted(name for name in {*before, *now} if before.get(name) != now.get(name)))
        raise BadInput(
            f"{store.path}: this canary ({subject} against {baseline}) ran with other settings "
            f"({changed}); keep them, or give another --out"
        )
    return int(number)


def next_check(store: MonitorStore, canary: int) -> tuple[int, bool]:
    """The number of the check to run and whether it takes up an unfinished one."""
    db = store.connection
    found = db.execute(
        "SELECT number, finished_at FROM canary_checks WHERE canary = ? ORDER BY number DESC LIMIT 1",
        (canary,),
    ).fetchone()
    if found is None:
        return 1, False
    number, finished = found
    return (int(number) + 1, False) if finished else (int(number), True)


def start_check(store: MonitorStore, canary: int, number: int) -> None:
    with store.connection as db:
        db.execute(
            "INSERT OR IGNORE INTO canary_checks (canary, number, started_at) VALUES (?, ?, ?)",
            (canary, number, _now()),
        )


def stored_slots(store: MonitorStore, canary: int, number: int) -> set[int]:
    rows = store.connection.execute(
        "SELECT slot FROM canary_probes WHERE canary = ? AND number = ?", (canary, number)
    )
    return {int(slot) for (slot,) in rows}


def add_probe(store: MonitorStore, canary: int, number: int, probe: ProbeRecord) -> None:
    """Store one finished probe (its own transaction); a probe stored already stays as it was."""
    with store.connection as db:
        db.execute(
            "INSERT OR IGNORE INTO canary_probes (canary, number, slot, bin, item, baseline, score, outcome, "
            "response, error, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                canary, number, probe.slot, probe.bin, probe.item, probe.baseline, probe.score,
                probe.outcome, probe.response, probe.error, _now(),
            ),
        )  # fmt: skip


def scored_probes(store: MonitorStore, canary: int, upto: int) -> list[tuple[str, float, float]]:
    """``(bin, baseline, canary score)`` of every scored probe of checks 1..``upto``, in the order
    they were planned (check, slot): the sequence the test runs over."""
    rows = store.connection.execute(
        "SELECT bin, baseline, score FROM canary_probes "
        "WHERE canary = ? AND number <= ? AND score IS NOT NULL ORDER BY number, slot",
        (canary, upto),
    )
    return [(str(name), float(base), float(score)) for name, base, score in rows]


def probe_errors(store: MonitorStore, canary: int, number: int) -> int:
    found = store.connection.execute(
        "SELECT count(*) FROM canary_probes WHERE canary = ? AND number = ? AND score IS NULL",
        (canary, number),
    ).fetchone()
    return int(found[0])


def finish_check(store: MonitorStore, canary: int, number: int, status: str, body: CanaryAlert) -> None:
    with store.connection as db:
        db.execute(
            "UPDATE canary_checks SET finished_at = ?, status = ?, body = ? WHERE canary = ? AND number = ?",
            (_now(), status, json.dumps(body.model_dump(), sort_keys=True), canary, number),
        )


def checks(store: MonitorStore, canary: int) -> list[tuple[int, str | None, str | None]]:
    """``(number, status, body)`` of every check of ``canary``, unfinished ones with ``None``."""
    rows = store.connection.execute(
        "SELECT number, status, body FROM canary_checks WHERE canary = ? ORDER BY number", (canary,)
    )
    return [(int(number), status, body) for number, status, body in rows]
