"""Rejected prompts in the cells they would have counted in, and comparisons across lengths on the
(case, position) pairs both lengths hold, so a rejection or an error at one length cannot mix a
different set of depths into a gap."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from rotscope.rows import Row, instance_means, scored


def _place(position: str | None, depth: float | None) -> Any:
    return position if position is not None else depth


def rejected_by_cell(rejections: Iterable[dict[str, Any]]) -> dict[tuple[Any, ...], list[str]]:
    """(task, length, position name or depth, filler) -> the case ids rejected there, for probes
    (a control's rejection is listed in the run's rejections only)."""
    cells: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for rejection in rejections:
        if rejection["control"]:
            continue
        key = (
            rejection["task"],
            rejection["length"],
            _place(rejection["position"], rejection["depth"]),
            rejection["filler"],
        )
        cells[key].extend(rejection["case_ids"])
    return cells


def with_rejections(
    cells: list[dict[str, Any]],
    rejections: Iterable[dict[str, Any]],
    empty_cell: Callable[[str, int, float | None, str | None, str | None], dict[str, Any]],
) -> list[dict[str, Any]]:
    """``cells`` with each one's ``rejected`` count and ``rejected_cases``; a cell whose prompts were
    all rejected is added from ``empty_cell`` with ``all_rejected`` true, so it is shown, not lost."""
    rejected = rejected_by_cell(rejections)
    seen: set[tuple[Any, ...]] = set()
    annotated: list[dict[str, Any]] = []
    for cell in cells:
        key = (cell["task"], cell["length"], _place(cell["position"], cell["depth"]), cell.get("filler"))
        seen.add(key)
        cases = sorted(set(rejected.get(key, [])))
        annotated.append({**cell, "rejected": len(cases), "rejected_cases": cases, "all_rejected": False})
    for key, case_ids in rejected.items():
        if key in seen:
            continue
        task, length, place, filler = key
        depth = None if isinstance(place, str) or place is None else float(place)
        position = place if isinstance(place, str) else None
        cases = sorted(set(case_ids))
        annotated.append(
            {**empty_cell(task, length, depth, position, filler), "rejected": len(cases),
             "rejected_cases": cases, "all_rejected": True}
        )  # fmt: skip
    return annotated


def _questions(rows: Iterable[Row]) -> dict[tuple[str, Any], list[Row]]:
    by_question: dict[tuple[str, Any], list[Row]] = defaultdict(list)
    for row in scored(rows):
        by_question[(row["case_id"], _place(row["position"], row["depth"]))].append(row)
    return by_question


def matched_means(
    short: Iterable[Row], long: Iterable[Row]
) -> tuple[dict[str, float], dict[str, float], int]:
    """Per instance (a prompt: the keys of one multikey prompt are one instance, so a gap is
    clustered on the prompt), its mean at each of two lengths over the (case, position) pairs
    scored at both, and how many (case, position) pairs only one length holds (left out of the
    comparison)."""
    short_questions, long_questions = _questions(short), _questions(long)
    matched = short_questions.keys() & long_questions.keys()
    unmatched = len(short_questions.keys() ^ long_questions.keys())
    short_rows = [row for key in sorted(matched, key=str) for row in short_questions[key]]
    long_rows = [row for key in sorted(matched, key=str) for row in long_questions[key]]
    return instance_means(short_rows), instance_means(long_rows), unmatched


def unbalanced_lengths(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Lengths that lack (case, position) pairs another length holds (rejected, failed or pending
    there): their scores average over a different set of depths and cases than the others'."""
    by_length: dict[int, set[tuple[str, Any]]] = defaultdict(set)
    for row in scored(rows):
        by_length[row["length_target"]].add((row["case_id"], _place(row["position"], row["depth"])))
    every = set().union(*by_length.values()) if by_length else set()
    return [
        {"length": length, "missing": len(every - held)}
        for length, held in sorted(by_length.items())
        if every - held
    ]
