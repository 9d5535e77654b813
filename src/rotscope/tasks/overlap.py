"""Lexical overlap between each question of a case file and its evidence: the check the ``nolima``
family applies to its own cases (no content word shared: ``_util.text.shared_content_words``),
run on a user's cases, so a probe meant to need a hop is not one string matching answers
(docs/experiment-file.md, "Case files")."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rotscope._util.text import STOP_WORDS, shared_content_words, stem
from rotscope.tasks.cases import CaseRecord, read_case_file

NOLIMA_THRESHOLD = 0
"""Shared content words a question may have with its evidence (the nolima family's rule: none)."""


@dataclass(frozen=True)
class CaseOverlap:
    """The question's content words whose stems its evidence documents share."""

    case_id: str
    shared: tuple[str, ...]

    @property
    def string_matchable(self) -> bool:
        """More shared content words than the nolima family allows: string matching can find the
        evidence from the question's own words."""
        return len(self.shared) > NOLIMA_THRESHOLD


def case_overlaps(records: Iterable[CaseRecord]) -> list[CaseOverlap]:
    """Each case's overlap, in file order; a case without documents (an evidence-absent case)
    shares nothing."""
    found: list[CaseOverlap] = []
    for record in records:
        shared: set[str] = set()
        for document in record.documents:
            shared |= shared_content_words(record.question, document.text)
        words = re.findall(r"[a-z0-9]+", record.question.lower())
        named = sorted({word for word in words if word not in STOP_WORDS and stem(word) in shared})
        found.append(CaseOverlap(record.case_id, tuple(named)))
    return found


def overlap_notice(path: Path) -> str | None:
    """The line a run prints before running a case file some of whose cases string matching can
    answer (the check of ``rotscope cases check FILE``, as a warning: the run goes on); ``None``
    when none can."""
    records = read_case_file(path)
    flagged = [overlap for overlap in case_overlaps(records) if overlap.string_matchable]
    if not flagged:
        return None
    named = ", ".join(f"{overlap.case_id} ({', '.join(overlap.shared)})" for overlap in flagged[:5])
    more = f" and {len(flagged) - 5} more" if len(flagged) > 5 else ""
    return (
        f"case file {path}: {len(flagged)} of {len(records)} questions share content words with their "
        f"evidence, so string matching can answer them (the nolima family allows none): {named}{more}; "
        f"rotscope cases check {path} lists them"
    )
