"""The analysis builds the summary's typed records directly, and a record dumps only the keys its
builder set (``Record.model_dump``): an optional key the summary JSON has always left out where it
does not apply stays out, never null (docs/records.md)."""

from __future__ import annotations

from typing import Any

from rotscope.analysis.bracket import contradicts, empty_bracket
from rotscope.analysis.cells import cell, cell_key, cell_stats
from rotscope.analysis.tasks import task_analysis


def _row(case: int, length: int, correct: bool, variant: int = 0, status: str = "ok") -> dict[str, Any]:
    return {
        "task": "niah",
        "case_id": f"niah-{case:02d}",
        "instance_id": f"niah-{case:02d}@{length}",
        "item": 0,
        "length_target": length,
        "depth": 0.5,
        "position": None,
        "filler": None,
        "status": status,
        "outcome": "correct" if correct else "incorrect",
        "category": None if correct else "wrong",
        "judge_verdict": None,
        "haystack_variant": variant,
        "error": "timeout after 30 s" if status == "error" else None,
    }


def test_a_cell_of_one_variant_and_static_filler_leaves_out_by_variant_and_filler() -> None:
    rows = [_row(case, 256, case % 2 == 0) for case in range(4)]
    dumped = cell(cell_key("niah", 256, 0.5, None, None), rows).model_dump()
    assert "by_variant" not in dumped and "filler" not in dumped and "layout" not in dumped
    assert dumped["position"] is None  # set by the key: a null, not an absent key
    split = cell_stats([_row(case, 256, True, variant=case % 2) for case in range(4)])
    assert [part.variant for part in split.by_variant or []] == [0, 1]


def test_top_error_is_set_only_for_a_task_with_error_rows() -> None:
    clean = [_row(case, length, True) for case in range(4) for length in (256, 512)]
    assert "top_error" not in task_analysis("niah", clean).model_dump()
    failing = [*clean, _row(9, 512, False, status="error")]
    top = task_analysis("niah", failing).top_error
    assert top is not None and (top.message, top.count, top.errors) == ("timeout after 30 s", 1, 1)


def test_contradicts_reads_the_typed_bracket_and_its_dump_alike() -> None:
    bracket = empty_bracket("no-data")
    assert contradicts(None, bracket) is contradicts(None, bracket.model_dump()) is False
