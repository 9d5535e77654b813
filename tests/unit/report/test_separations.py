"""Accuracy by separation in the terminal's lines and the Markdown table: the same rows (task,
separation, length or all, accuracy and interval, instances, the filler tokens measured between the
facts), each view in its own words; nothing where the run has no such axis."""

from __future__ import annotations

from typing import Any

from rotscope.records.cells import SeparationCell
from rotscope.report.separations import SeparationRow, separation_lines, separation_markdown, separation_rows


def _cell(task: str, separation: int | float, length: int | None, **fields: Any) -> SeparationCell:
    values: dict[str, Any] = {
        "task": task, "separation": separation, "length": length, "asked_tokens": 64.0,
        "measured_tokens": 70.4, "n": 6, "instances": 6, "correct": 3, "incorrect": 3, "abstained": 0,
        "errors": 0, "accuracy": 0.5, "instance_accuracy": 0.5, "ci_low": 0.1, "ci_high": 0.9,
        "ci_method": "adjusted t",
    }  # fmt: skip
    return SeparationCell(**{**values, **fields})


CELLS = [
    _cell("join", 64, None),
    _cell("join", 0.25, 2048, measured_tokens=1234.0, asked_tokens=None, instance_accuracy=None),
    _cell("a|b", 1024, 4096, ci_low=None, ci_high=None, measured_tokens=None),
]


def test_one_builder_of_the_rows() -> None:
    assert separation_rows(CELLS)[1] == SeparationRow(
        task="join",
        separation="0.25 filler",
        length=2048,
        accuracy="n/a [0.10, 0.90]",
        instances=6,
        between="1,234 apart (asked 0)",
    )
    assert [row.task for row in separation_rows(CELLS)] == ["join", "join", "a|b"]  # escaped by a view


def test_terminal_lines() -> None:
    assert separation_lines(CELLS) == [
        "accuracy by separation (filler tokens between the facts to combine; 95% adjusted t):",
        "  join       64 tokens     all lengths  0.50 [0.10, 0.90] n=6; 70 apart (asked 64)",
        "  join       0.25 filler   length 2,048 n/a [0.10, 0.90] n=6; 1,234 apart (asked 0)",
        "  a|b        1,024 tokens  length 4,096 0.50 no interval n=6; -",
    ]


def test_markdown_table() -> None:
    assert separation_markdown(CELLS) == [
        "",
        "Accuracy by separation (95% adjusted t):",
        "",
        "| task | separation | length | accuracy [95%] | instances | filler tokens between facts |",
        "|---|---|---|---|---|---|",
        "| join | 64 tokens | all | 0.50 [0.10, 0.90] | 6 | 70 apart (asked 64) |",
        "| join | 0.25 filler | 2,048 | n/a [0.10, 0.90] | 6 | 1,234 apart (asked 0) |",
        "| a\\|b | 1,024 tokens | 4,096 | 0.50 no interval | 6 | - |",
    ]


def test_mixed_methods_and_no_axis() -> None:
    mixed = [CELLS[0], _cell("join", 128, None, ci_method="cluster bootstrap")]
    method = "adjusted t on instance means, clustered as each line says"
    assert separation_lines(mixed)[0].endswith(f"95% {method}):")
    assert separation_markdown(mixed)[1] == f"Accuracy by separation (95% {method}):"
    assert separation_lines(None) == separation_lines([]) == []
    assert separation_markdown(None) == separation_markdown([]) == []
