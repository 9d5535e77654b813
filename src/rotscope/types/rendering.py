"""Where a case goes and what it became: a ``Layout`` (length and depth), the ``RenderedPrompt``
with each evidence piece's exact token ``Span``, and what a family that plans its own prompts hands
over (``FamilyPrompts``, with the ``Rejection``s of the verifier)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rotscope.types.case import Case


@dataclass(frozen=True)
class Layout:
    """Where a case goes: the whole prompt's target length in model tokens and the evidence depth.

    ``depth`` is the fraction of filler tokens that precede the evidence (0 = first, 1 = last);
    ``position`` is its name when one was asked for (``midpoint``), else ``None``.
    """

    length_tokens: int
    depth: float
    position: str | None = None
    filler: str | None = None
    """The case's own filler stream (a reasoning family's ``with_solutions``, ``questions_only`` or
    ``neutral``); ``None`` for the experiment's corpus."""
    separation: int | float | None = None
    """The distance between the facts the case combines (``placement.separations``): filler tokens
    (an int) or a share of the filler (a float in (0, 1)); ``None`` where the run has no such axis."""


@dataclass(frozen=True)
class Span:
    """Exact placement of one evidence piece in the final prompt's token ids, ``[start, end)``."""

    evidence_id: str
    token_start: int
    token_end: int
    depth: float


@dataclass(frozen=True)
class RenderedPrompt:
    """The final prompt as the model will see it: chat messages, full text and token ids."""

    messages: tuple[dict[str, str], ...]
    text: str
    token_ids: tuple[int, ...]
    spans: tuple[Span, ...]
    haystack_tokens: int
    corpus_digest: str
    context_start: int = 0
    """Token index where the haystack (filler and evidence) begins; what precedes it is template
    and header, what follows the haystack is the question footer and template suffix."""
    tokenizer_digest: str = ""
    """The tokenizer the spans were computed with: spans are never reused under another one."""
    filler_chars: tuple[tuple[int, int], ...] = ()
    """Character ranges ``[start, end)`` of the last message's content that are filler: the haystack
    without its evidence pieces, and none of the header, question, instructions or template."""

    @property
    def prompt_tokens(self) -> int:
        return len(self.token_ids)

    def filler_text(self) -> str:
        """The filler alone, its pieces (cut apart by evidence) one per line; what a wrong answer is
        traced to (``context_value``, ``filler_number``). Empty for a prompt without filler."""
        content = self.messages[-1]["content"] if self.messages else ""
        return "\n".join(content[start:end] for start, end in self.filler_chars)


@dataclass(frozen=True)
class Rejection:
    """A prompt the verifier rejected (never sent) and the cell each of its questions would have
    counted in, so a comparison across lengths can show what is missing where."""

    task: str
    case_ids: tuple[str, ...]
    """The scored case of each question of the prompt (one for a single-question prompt)."""
    control: bool
    length: int
    depth: float | None
    """``None`` where the layout never got a depth (an offset a length cannot hold)."""
    position: str | None
    filler: str | None
    reason: str

    @classmethod
    def of(cls, case: Case, layout: Layout | None, reason: str, *, length: int | None = None,
           position: str | None = None) -> Rejection:  # fmt: skip
        return cls(
            task=case.task,
            case_ids=tuple(part.case_id for _, part in case.scored_parts()),
            control=case.control,
            length=layout.length_tokens if layout is not None else int(length or 0),
            depth=layout.depth if layout is not None else None,
            position=layout.position if layout is not None else position,
            filler=layout.filler if layout is not None else None,
            reason=reason,
        )


@dataclass(frozen=True)
class FamilyPrompts:
    """Prompts a family rendered itself, from its own filler and layouts, verified like any."""

    rendered: tuple[tuple[Case, Layout, RenderedPrompt], ...]
    rejected: tuple[Rejection, ...]
    corpus: dict[str, Any]
    """What the run's metadata records of the family's filler (its source and digest)."""
    corpus_label: str
    """The run's filler source when the family is the only one that uses filler."""
