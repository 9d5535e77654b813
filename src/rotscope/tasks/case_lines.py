"""A generated case (``niah``, ``competitive``...) as a case-file line, so a failure can be kept as a
permanent case: the same question, evidence bytes in the same order and the same accepted answers.

What a case file cannot say is not carried over and is said so: a case of a family that plans its
own prompts, an answer of another kind than a phrase (the final ``Answer:`` line), a case checked by
claims of its own family. The line places all evidence as one block at the layout's depth (as every
case-file case does), and evidence that was a line of a corpus document is inserted instead.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

from rotscope.evidence_roles import placement_of
from rotscope.types import ABSENT_SUFFIX, Case, Evidence

ANSWER_CLAIM = "answer"
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9._-]")


class CasePiece(TypedDict):
    """A distractor of a case-file line."""

    id: str
    text: str


class CaseDocument(CasePiece):
    """A document of a case-file line, with the claims it states."""

    claims: list[str]


class _CaseLineBase(TypedDict):
    case_id: str
    question: str


class CaseLine(_CaseLineBase, total=False):
    """A case-file line as written (``tasks.cases.CaseRecord`` reads it back)."""

    documents: list[CaseDocument]
    distractors: list[CasePiece]
    claims: dict[str, list[str]]
    required_claims: list[str]
    forbidden_claims: list[str]
    abstain: bool
    slices: dict[str, str]


class NotACaseLine(ValueError):
    """A case that a case-file line cannot reproduce; the message says why."""


def line_id(identifier: str) -> str:
    """An id the case-file contract accepts: a control's ``~absent`` becomes ``.absent`` and any
    other character outside ``[A-Za-z0-9._-]`` a ``-``."""
    identifier = identifier.replace(ABSENT_SUFFIX, ABSENT_SUFFIX.replace("~", "."))
    cleaned = _NOT_IN_ID.sub("-", identifier)[:80]
    return cleaned if cleaned[:1].isalnum() else f"c{cleaned}"[:80]


def case_line(case: Case) -> dict[str, Any]:
    """The case-file line of ``case`` (without ``origin`` or ``pin``); ``NotACaseLine`` when a line
    cannot reproduce it."""
    if case.parts:
        raise NotACaseLine("a multi-question prompt: each of its questions is a case of its own")
    if case.evidence_only:
        raise NotACaseLine("an evidence-only control fails with no padding at all, at no layout to pin")
    if case.oracle.kind != "phrase":
        raise NotACaseLine(f"its answer is of kind {case.oracle.kind!r}; a case file checks phrases")
    if case.oracle.claims is not None:
        raise NotACaseLine("its family checks claims of its own")
    if any(evidence.depth is not None for evidence in case.evidence):
        raise NotACaseLine("its family pins evidence depths of its own")
    slices = dict(case.slices)
    slices.setdefault("family", case.task)
    line: dict[str, Any] = {"case_id": line_id(case.case_id), "question": case.question}
    if case.oracle.abstain:
        line["distractors"] = [_piece(evidence.evidence_id, evidence.text) for evidence in case.evidence]
        line["abstain"] = True
    else:
        line["documents"] = [
            {
                **_piece(evidence.evidence_id, evidence.text),
                "claims": [ANSWER_CLAIM] if placement_of(evidence.role) == "grid" else [],
            }
            for evidence in case.evidence
            if not _distractor(evidence)
        ]
        line["distractors"] = [
            _piece(evidence.evidence_id, evidence.text) for evidence in case.evidence if _distractor(evidence)
        ]
        line["claims"] = {ANSWER_CLAIM: list(dict.fromkeys(case.oracle.accepted()))}
        line["required_claims"] = [ANSWER_CLAIM]
    line["slices"] = slices
    return line


def _distractor(evidence: Evidence) -> bool:
    """A piece that cannot establish the answer: a role placed as a decoy is. A role nobody
    registered is kept as a document (without the answer's claim), never refused here."""
    return placement_of(evidence.role) == "seeded"


def _piece(identifier: str, text: str) -> CasePiece:
    return {"id": line_id(identifier), "text": text}
