"""Only padding moves: the layouts of one case must agree on everything but the filler.

Each prompt is verified on its own in ``verify.verify_prompt``; this check compares the prompts of
one case with each other. What precedes the haystack (template, system prompt, header), what
follows it (question, answer instructions, template suffix) and each evidence piece's bytes must
be identical in every layout, and for a ``grouped`` case the order of the pieces too. The
evidence-only control of a case is one more layout of it. A case whose layouts disagree loses all
of its items: a difference between its cells would not be a position effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rotscope.prompt.session_render import SESSION_FILLER
from rotscope.types import ABSENT_SUFFIX, EVIDENCE_ONLY_SUFFIX, Rejection, RenderedPrompt, Tokenizer, WorkItem


@dataclass(frozen=True)
class VariantSignature:
    """The parts of a prompt that must not change between layouts of a case."""

    head: str
    tail: str
    evidence: tuple[tuple[str, str], ...]
    """(evidence id, text) in prompt order; when the order may legitimately vary, the distinct texts
    alone (a layout may place declared copies of a piece, as the reasoning layouts do; each prompt's
    copies are counted against its case by ``verify.verify_prompt``)."""


def _piece_text(found: str) -> str:
    """An evidence unit's text without the white space that joins it to the filler (a line break
    for inserted evidence, the indentation of a line already in a code file)."""
    return found.strip()


def signature(prompt: RenderedPrompt, tokenizer: Tokenizer, *, ordered: bool) -> VariantSignature:
    """What ``prompt`` holds besides filler, read from its token ids and spans."""
    ids = prompt.token_ids
    spans = sorted(prompt.spans, key=lambda span: span.token_start)
    evidence_tokens = sum(span.token_end - span.token_start for span in spans)
    context_end = prompt.context_start + prompt.haystack_tokens + evidence_tokens
    pieces = [
        (span.evidence_id, _piece_text(tokenizer.decode(ids[span.token_start : span.token_end])))
        for span in spans
    ]
    return VariantSignature(
        head=tokenizer.decode(ids[: prompt.context_start]),
        tail=tokenizer.decode(ids[context_end:]),
        evidence=tuple(pieces) if ordered else tuple(("", text) for text in sorted({t for _, t in pieces})),
    )


def _difference(first: VariantSignature, other: VariantSignature) -> str:
    if first.head != other.head:
        return "the template, system prompt or header differ"
    if first.tail != other.tail:
        return "the question, answer instructions or template suffix differ"
    if sorted(first.evidence) != sorted(other.evidence):
        return "the evidence bytes differ"
    return "the evidence order differs"


def _describe(item: WorkItem) -> str:
    layout = item.layout
    return f"length {layout.length_tokens} {layout.position or f'depth {layout.depth:.2f}'}"


def _variant_key(item: WorkItem) -> tuple[str, str, bool]:
    """Items compared with each other: a case's layouts and its evidence-only control (its
    evidence-absent control, holding no evidence, is compared with itself across lengths). A
    case's layouts in session filler are compared with each other, not with its static ones."""
    session = item.layout.filler == SESSION_FILLER
    return item.case.task, item.case.case_id.removesuffix(EVIDENCE_ONLY_SUFFIX), session


def _case_key(item: WorkItem) -> tuple[str, str, bool]:
    """The case an item belongs to (in one kind of filler), controls included."""
    task, case_id, session = _variant_key(item)
    return task, case_id.removesuffix(ABSENT_SUFFIX), session


def inconsistent_cases(items: Sequence[WorkItem], tokenizer: Tokenizer) -> dict[tuple[str, str, bool], str]:
    """(task, case id, in session filler) -> why its layouts disagree, for every case whose layouts do."""
    groups: dict[tuple[str, str, bool], list[WorkItem]] = {}
    for item in items:
        groups.setdefault(_variant_key(item), []).append(item)
    problems: dict[tuple[str, str, bool], str] = {}
    for key, group in groups.items():
        ordered = group[0].case.grouped
        first = signature(group[0].prompt, tokenizer, ordered=ordered)
        for item in group[1:]:
            other = signature(item.prompt, tokenizer, ordered=ordered)
            if other != first:
                problems[_case_key(item)] = (
                    f"case {key[1]}: layouts disagree beyond padding ({_difference(first, other)} "
                    f"between {_describe(group[0])} and {_describe(item)}); none of its items is sent"
                )
                break
    return problems


def keep_consistent(
    items: Sequence[WorkItem], tokenizer: Tokenizer
) -> tuple[list[WorkItem], list[Rejection]]:
    """The items of cases whose layouts agree, and a rejection for each layout of a case dropped."""
    problems = inconsistent_cases(items, tokenizer)
    kept = [item for item in items if _case_key(item) not in problems]
    dropped = {
        (item.case.case_id, item.layout): Rejection.of(item.case, item.layout, problems[_case_key(item)])
        for item in items
        if _case_key(item) in problems
    }
    return kept, list(dropped.values())
