"""The terminal's per-length lines name the gaps' interval with its clusters (issue 48)."""

from __future__ import annotations

from typing import Any, cast

from rotscope.analysis.tasks import task_analysis
from rotscope.report.terminal import length_lines
from rotscope.rows import Row


def _rows(variants: int) -> list[Row]:
    """12 cases at 200 and 400 tokens, one depth: right at 200, the even cases right at 400."""
    rows: list[dict[str, Any]] = []
    for n in range(12):
        for length in (200, 400):
            right = length == 200 or n % 2 == 0
            rows.append({
                "task": "niah", "case_id": f"c{n:02d}", "instance_id": f"c{n:02d}", "length_target": length,
                "depth": 0.5, "position": None, "status": "ok",
                "outcome": "correct" if right else "incorrect", "category": None if right else "wrong_answer",
                "haystack_variant": n % variants, "control": 0,
                "filler": None, "error": None, "trial": 0, "slices": "[]",
            })  # fmt: skip
    return cast(list[Row], rows)


def test_the_gap_header_names_the_clusters() -> None:
    shared = length_lines(task_analysis("niah", _rows(3)))
    assert shared[0].endswith(
        "paired gap to 200 [95%, adjusted t on paired instance differences, clustered on 3 haystack variants]"
    )
    own = length_lines(task_analysis("niah", _rows(12)))
    assert own[0].endswith("paired gap to 200 [95%, adjusted t on paired instance differences]")
