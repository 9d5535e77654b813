"""Rejections in plain words: the cause first, repeated causes counted, a case left without a
prompt said, the full detail kept for the file."""

from __future__ import annotations

from rotscope.plan.rejections import (
    MAX_GROUP_LINES,
    cause_of,
    detail_records,
    layout_line,
    summary_lines,
)
from rotscope.types import Rejection

ISSUE_REASON = (
    "case renewal at Layout(length_tokens=512, depth=0.0, position='beginning', filler=None): the filler "
    "contains '45 days', a competing value for case renewal; evidence c1 sits at depth 0.12, asked 0.00 "
    "(tolerance 0.1; the haystack has 385 tokens); evidence c1 sits at depth 0.19, asked 0.00 "
    "(tolerance 0.1; the haystack has 385 tokens)"
)


def _rejection(reason: str = ISSUE_REASON, *, case: str = "renewal", length: int = 512,
               position: str | None = "beginning", depth: float | None = 0.0) -> Rejection:  # fmt: skip
    control = case.endswith("~absent")
    return Rejection("cases", (case,), control, length, depth, position, None, reason)


def test_the_competing_value_is_the_cause_without_retries_or_reprs() -> None:
    cause = cause_of(ISSUE_REASON)
    assert cause.text == "the filler contains '45 days', a competing value"
    assert cause.kind == "competing"
    line = layout_line(_rejection())
    assert (
        line == "case renewal, 512 tokens at the beginning: the filler contains '45 days', a competing value"
    )
    assert "Layout(" not in line and "retr" not in line


def test_depth_misses_alone_become_one_clause() -> None:
    reason = (
        "case refund at Layout(length_tokens=1024, depth=0.5, position='midpoint', filler=None): evidence p7 "
        "sits at depth 0.00, asked 0.50 (tolerance 0.1; the haystack has 897 tokens); evidence p7 sits at "
        "depth 1.00, asked 0.50 (tolerance 0.1; the haystack has 897 tokens)"
    )
    line = layout_line(_rejection(reason, case="refund", length=1024, position="midpoint", depth=0.5))
    assert line == (
        "case refund, 1,024 tokens at the midpoint: evidence p7 fits no place within 0.1 of depth 0.50 "
        "(2 places tried)"
    )


def test_other_layouts_read_in_words() -> None:
    offset = _rejection("case r at length 512: offset @900 is beyond its 400 filler tokens", position="@900",
                        depth=None)  # fmt: skip
    assert (
        layout_line(offset)
        == "case renewal, 512 tokens at offset @900: offset @900 is beyond its 400 filler tokens"
    )
    control = _rejection(case="renewal~absent", position="absent")
    assert layout_line(control).startswith("case renewal, 512 tokens, evidence absent: the filler contains")
    fraction = _rejection("a; b; c", position="0.25", depth=0.25)
    assert layout_line(fraction) == "case renewal, 512 tokens at depth 0.25: a (and 2 more)"


def test_a_shared_cause_is_counted_once_and_a_case_left_with_nothing_is_said() -> None:
    rejections = [
        _rejection(length=length, position=position)
        for length in (512, 1024)
        for position in ("beginning", "midpoint", "end")
    ] + [_rejection(case="renewal~absent", position="absent")]
    lines = summary_lines(rejections, {("cases", "refund")}, "runs/x/rejections.jsonl")
    assert lines == [
        "7 layouts of case renewal rejected: the filler contains '45 days', a competing value "
        "— remove it or exclude the file",
        "case renewal (cases) is not measured: the verifier rejected all 7 of its layouts",
        "every rejection in full (retries, layouts): runs/x/rejections.jsonl",
    ]
    measured = summary_lines(rejections[:1], {("cases", "renewal")})
    assert measured == [
        "rejected: case renewal, 512 tokens at the beginning: "
        "the filler contains '45 days', a competing value"
    ]


def test_many_causes_are_capped_with_a_count() -> None:
    rejections = [_rejection(f"reason {i}", case=f"c{i}") for i in range(MAX_GROUP_LINES + 5)]
    lines = summary_lines(rejections, {(r.task, r.case_ids[0]) for r in rejections})
    assert len(lines) == MAX_GROUP_LINES
    assert lines[-1] == "... and 6 more lines of rejections"


def test_the_detail_keeps_the_full_reason() -> None:
    (record,) = detail_records([_rejection()])
    assert record["reason"] == ISSUE_REASON
    assert record["cause"] == "the filler contains '45 days', a competing value"
    assert record["layout"] == "512 tokens at the beginning" and record["case"] == "renewal"
