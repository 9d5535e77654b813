"""Rejected prompts in the cells they would have counted in, and comparisons across lengths on the
(case, position) pairs both lengths hold, so a rejection or an error at one length cannot mix a
different set of depths into a gap."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from rotscope.records.cells import Cell
from rotscope.records.effective import UnbalancedLength
from rotscope.records.summary import Rejection
from rotscope.rows import Row, instance_means, scored

Place = float | str | None
"""Where a question sits in its cell: the position's name, else the depth."""


def _place(position: str | None, depth: float | str | None) -> Place:
    return position if position is not None else depth


def rejected_by_cell(rejections: Iterable[Rejection]) -> dict[tuple[str, int, Place, str | None], list[str]]:
    """(task, length, position name or depth, filler) -> the case ids rejected there, for probes
    (a control's rejection is listed in the run's rejections only)."""
    cells: dict[tuple[str, int, Place, str | None], list[str]] = defaultdict(list)
    for rejection in rejections:
        if rejection.control:
            continue
        key = (
            rejection.task,
            rejection.length,
            _place(rejection.position, rejection.depth),
            rejection.filler,
        )
        cells[key].extend(rejection.case_ids)
    return cells


def with_rejections(
    cells: list[Cell],
    rejections: Iterable[Rejection],
    empty_cell: Callable[[str, int, float | None, str | None, str | None], Cell],
) -> list[Cell]:
    """``cells`` with each one's ``rejected`` count and ``rejected_cases``; a cell whose prompts were
    all rejected is added from ``empty_cell`` with ``all_rejected`` true, so it is shown, not lost."""
    rejected = rejected_by_cell(rejections)
    seen: set[tuple[str, int, Place, str | None]] = set()
    annotated: list[Cell] = []
    for cell in cells:
        key = (cell.task, cell.length, _place(cell.position, cell.depth), cell.filler)
        seen.add(key)
        cases = sorted(set(rejected.get(key, [])))
        annotated.append(
            cell.model_copy(update={"rejected": len(cases), "rejected_cases": cases, "all_rejected": False})
        )
    for key, case_ids in rejected.items():
        if key in seen:
            continue
        task, length, place, filler = key
        depth = None if isinstance(place, str) or place is None else float(place)
        position = place if isinstance(place, str) else None
        cases = sorted(set(case_ids))
        annotated.append(
            empty_cell(task, length, depth, position, filler).model_copy(
                update={"rejected": len(cases), "rejected_cases": cases, "all_rejected": True}
            )
        )
    return annotated


def _questions(rows: Iterable[Row]) -> dict[tuple[str, Place], list[Row]]:
    by_question: dict[tuple[str, Place], list[Row]] = defaultdict(list)
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


def unbalanced_lengths(rows: Iterable[Row]) -> list[UnbalancedLength]:
    """Lengths that lack (case, position) pairs another length holds (rejected, failed or pending
    there): their scores average over a different set of depths and cases than the others'."""
    by_length: dict[int, set[tuple[str, Place]]] = defaultdict(set)
    for row in scored(rows):
        by_length[row["length_target"]].add((row["case_id"], _place(row["position"], row["depth"])))
    every = set().union(*by_length.values()) if by_length else set()
    return [
        UnbalancedLength(length=length, missing=len(every - held))
        for length, held in sorted(by_length.items())
        if every - held
    ]
