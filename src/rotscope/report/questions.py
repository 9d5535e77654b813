"""Accuracy per question (``summary.cases``): the study's own table, shown by ``show`` (terminal
and ``--markdown``) and the HTML report where a run asks few questions; every run's JSON holds it.
A question's rows share its case, so its share has no interval: the per-length intervals are the
task's (clustered) ones above it."""

from __future__ import annotations

from rotscope.records.summary import CaseResult, Summary
from rotscope.report.numbers import score as _fmt

QUESTIONS_SHOWN = 12
"""The most cases a run may have for the views to list each one; beyond it, ``--json`` has them."""


def shown_questions(summary: Summary) -> list[CaseResult]:
    """The cases whose accuracy the views list: all of them where the run asks at most
    ``QUESTIONS_SHOWN`` (and more than one) question, none otherwise."""
    cases = [case for case in summary.cases if case.accuracy is not None or case.scored]
    return cases if 1 < len(cases) <= QUESTIONS_SHOWN else []


def kind_of(case: CaseResult) -> str:
    """The case's ``kind`` slice (codebase: ``question`` or ``control``), else empty."""
    return case.slices.get("kind", "")


def decoy_answers(case: CaseResult) -> int:
    """Scored rows whose reply named one of the case's decoys (fake needles)."""
    return case.categories.get("decoy", 0)


def by_length(case: CaseResult) -> str:
    """``512 2/3, 1,024 1/3``: each length's correct of scored rows."""
    return ", ".join(f"{entry.length:,} {entry.correct}/{entry.scored}" for entry in case.lengths or [])


def question_lines(summary: Summary) -> list[str]:
    """The terminal's and Markdown's lines: one per question, its share, its rows per length and
    the replies that named a decoy."""
    cases = shown_questions(summary)
    if not cases:
        return []
    lines = ["accuracy per question (correct/scored rows over its lengths, depths and trials):"]
    for case in cases:
        kind = f" ({kind_of(case)})" if kind_of(case) == "control" else ""
        lines.append(
            f"  {case.task} {case.case_id}{kind}: {_fmt(case.accuracy)} ({case.correct}/{case.scored}); "
            f"by length {by_length(case)}; decoy answers {decoy_answers(case)}"
            + (f" — {case.question}" if case.question else "")
        )
    return lines
