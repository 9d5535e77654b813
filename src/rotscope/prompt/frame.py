"""The fixed text around the haystack and how evidence is cut into units.

A prompt's frame is everything that does not depend on the haystack: the chat template's prefix
and suffix, the header that opens the context and the footer that closes it with the question(s)
and the answer instruction. Evidence is inserted as units: the piece's text on a line of its own,
before all filler or ending a filler line.
"""

from __future__ import annotations

from dataclasses import dataclass

from rotscope.answer_kinds import instruction_for
from rotscope.types import Evidence

HEADER = "Answer the question at the end using only this context.\n\n<context>\n"
FOOTER_TEMPLATE = "\n</context>\n\nQuestion: {question}\n{instruction}"
FOOTER = FOOTER_TEMPLATE.replace("{instruction}", instruction_for("phrase"))
"""The footer of a phrase answer; every kind's instruction is the one its scorer registered
(``rotscope.answer_kinds.instruction_for``)."""
MULTI_FOOTER = (
    "\n</context>\n\nQuestions:\n{question}\n"
    "Reply with exactly one line per question, in the form Q<k>: <answer>, and nothing else. "
    "Answer with the exact name, number or phrase from the context; if the context does not say, "
    "answer: not in the context."
)


@dataclass(frozen=True)
class Frame:
    """The parts of a prompt that do not depend on the haystack, as token ids."""

    prefix: tuple[int, ...]
    header: tuple[int, ...]
    footer: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_bytes: bytes
    header_bytes: bytes
    footer_bytes: bytes
    suffix_bytes: bytes

    @property
    def fixed_tokens(self) -> int:
        return len(self.prefix) + len(self.header) + len(self.footer) + len(self.suffix)


def evidence_unit(evidence: Evidence, at_start: bool) -> str:
    """The bytes inserted for a piece: a line of its own, before all filler or ending a filler line."""
    return evidence.text + "\n" if at_start else "\n" + evidence.text


def unit_for(evidence: Evidence, cut: int, end: int, last: bool) -> str:
    """The unit at ``cut``; with no filler at all (an evidence-only prompt) the last piece is bare,
    since the header ends and the footer starts with a line break of their own."""
    if end == 0 and last:
        return evidence.text
    return evidence_unit(evidence, at_start=cut == 0)
