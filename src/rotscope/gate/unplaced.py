"""Layouts one run of a pair placed and the other could not: counted and named, not refused.

A candidate's template, tokenizer or injected assembly fault (``run --inject``) can leave no room
for a layout the baseline measured (a passage longer than the haystack it displaces, a window
smaller than the prompt). Its verifier then rejects the layout and writes why in the run folder's
``rejections.jsonl``; the layout has rows in one run only. Such rows are taken out of the pairing
(every other row must still pair, ``pairing.check_pairable``) and listed in the release record,
which is then never a PASS: a layout that could not be placed has not passed (docs/gates.md,
"Layouts one run could not place")."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from rotscope.gate.pairing import RunData, pair_key, row_position
from rotscope.gate.record_checks import Unplaced, UnplacedLayout
from rotscope.plan.rejections import REJECTIONS_FILE
from rotscope.position import Position


def _rejected(run: RunData) -> dict[tuple[str, str, int, str], str]:
    """The layouts ``run``'s verifier rejected, (task, case, length, position) -> reason."""
    path = run.path / REJECTIONS_FILE
    if not path.is_file():
        return {}
    found: dict[tuple[str, str, int, str], str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record: dict[str, Any] = json.loads(line)
        position = Position.from_stored(record.get("position"), record.get("depth") or 0.0).label
        if record.get("filler"):
            position = f"{record['filler']}/{position}"
        for case_id in record.get("case_ids") or ():
            key = (str(record["task"]), str(case_id), int(record["length"]), position)
            found.setdefault(key, str(record.get("cause") or record.get("reason") or ""))
    return found


def set_aside(baseline: RunData, candidate: RunData) -> tuple[RunData, RunData, Unplaced | None]:
    """Both runs without the rows whose layout the other run rejected, and those layouts named;
    rows missing from the other run for any other reason stay (the pairing refuses them)."""
    rows_of = {"baseline": baseline, "candidate": candidate}
    keys = {role: {pair_key(row) for row in run.rows} for role, run in rows_of.items()}
    layouts: dict[tuple[Any, ...], UnplacedLayout] = {}
    dropped: dict[str, set[tuple[Any, ...]]] = {"baseline": set(), "candidate": set()}
    for role, other in (("baseline", "candidate"), ("candidate", "baseline")):
        rejected = _rejected(rows_of[other])
        for row in rows_of[role].rows:
            key = pair_key(row)
            if key in keys[other]:
                continue
            where = (row["task"], row["case_id"], int(row["length_target"]), row_position(row))
            reason = rejected.get(where)
            if reason is None:
                continue
            dropped[role].add(key)
            layouts.setdefault(
                where,
                UnplacedLayout(
                    task=where[0],
                    case_id=where[1],
                    length=where[2],
                    position=where[3],
                    unplaced_in=other,  # type: ignore[arg-type]
                    reason=reason,
                ),
            )
    if not layouts:
        return baseline, candidate, None
    kept = {
        role: replace(run, rows=[row for row in run.rows if pair_key(row) not in dropped[role]])
        for role, run in rows_of.items()
    }
    return kept["baseline"], kept["candidate"], Unplaced(count=len(layouts), layouts=list(layouts.values()))


def unplaced_reason(unplaced: Unplaced) -> str:
    """The verdict's line: how many layouts, in which run, the first few named."""
    runs = sorted({layout.unplaced_in for layout in unplaced.layouts})
    named = "; ".join(
        f"{layout.task} {layout.case_id} at {layout.length} tokens, {layout.position}"
        for layout in unplaced.layouts[:5]
    )
    more = f" and {unplaced.count - 5} more" if unplaced.count > 5 else ""
    return (
        f"{unplaced.count} layouts could not be placed in the {' and the '.join(runs)} "
        f"({unplaced.layouts[0].reason}): {named}{more}"
    )
