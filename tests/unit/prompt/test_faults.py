"""Each injected assembly fault (``prompt.faults``): what it does to the token ids and spans of a
verified prompt, and that it is the same every time (seeded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.errors import BadInput
from rotscope.prompt import faults
from rotscope.prompt.faults import Fault, FaultRefused, inject, parse_faults
from rotscope.types import RenderedPrompt, Tokenizer, WorkItem
from tests.support.case_helpers import case_config, plan_for

BACKEND = FakeBackend("lexical", lexical_responder())


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[WorkItem]:
    tmp_path: Path = tmp_path_factory.mktemp("faults")
    plan = plan_for(case_config(tmp_path, evidence_only=False, controls=False), BACKEND)
    return plan.items


def _item(items: list[WorkItem], case: str, position: str, length: int = 600) -> WorkItem:
    return next(
        i
        for i in items
        if i.case.case_id == case and i.layout.position == position and i.layout.length_tokens == length
    )


def _apply(item: WorkItem, spec: str, **kwargs: int) -> faults.Faulted:
    return inject(
        parse_faults([spec]), item.prompt, item.case, item.layout, BACKEND.tokenizer(), seed=0, **kwargs
    )


def _span_text(prompt: RenderedPrompt, evidence_id: str, tokenizer: Tokenizer) -> str:
    span = next(s for s in prompt.spans if s.evidence_id == evidence_id)
    return tokenizer.decode(prompt.token_ids[span.token_start : span.token_end])


def _frame_kept(before: RenderedPrompt, after: RenderedPrompt) -> None:
    """Template and header (before the haystack) and question with suffix (after it) untouched."""
    start = before.context_start
    assert after.token_ids[:start] == before.token_ids[:start]
    tail = before.prompt_tokens - _end(before)
    assert after.token_ids[-tail:] == before.token_ids[-tail:]
    assert after.messages[-1]["content"] in after.text


def _end(prompt: RenderedPrompt) -> int:
    return (
        prompt.context_start + prompt.haystack_tokens + sum(s.token_end - s.token_start for s in prompt.spans)
    )


def _spans_exact(before: RenderedPrompt, after: RenderedPrompt, tokenizer: Tokenizer) -> None:
    for span in after.spans:
        assert _span_text(after, span.evidence_id, tokenizer) == _span_text(
            before, span.evidence_id, tokenizer
        )


def test_trim_head_drops_the_haystack_start_and_the_evidence_in_it(items: list[WorkItem]) -> None:
    tokenizer = BACKEND.tokenizer()
    first = _item(items, "harbour-master", "beginning")
    faulted = _apply(first, "trim-head")
    assert faulted.lost == ("port-2",)
    assert "port-2" not in {s.evidence_id for s in faulted.prompt.spans}
    dropped = first.prompt.prompt_tokens - faulted.prompt.prompt_tokens
    assert dropped >= round(0.25 * (_end(first.prompt) - first.prompt.context_start))
    _frame_kept(first.prompt, faulted.prompt)
    last = _item(items, "harbour-master", "end")
    kept = _apply(last, "trim-head=0.1")
    assert "port-2" not in kept.lost
    _spans_exact(last.prompt, kept.prompt, tokenizer)
    assert [s.token_start for s in kept.prompt.spans] < [s.token_start for s in last.prompt.spans]


def test_trim_tail_drops_the_haystack_end_before_the_question(items: list[WorkItem]) -> None:
    last = _item(items, "harbour-master", "end")
    faulted = _apply(last, "trim-tail")
    assert "port-2" in faulted.lost and faulted.prompt.prompt_tokens < last.prompt.prompt_tokens
    _frame_kept(last.prompt, faulted.prompt)
    first = _item(items, "harbour-master", "beginning")
    kept = _apply(first, "trim-tail")
    assert not kept.lost
    # nothing before the evidence moved: its spans stand where they stood
    assert [(s.token_start, s.token_end) for s in kept.prompt.spans] == [
        (s.token_start, s.token_end) for s in first.prompt.spans
    ]


def test_tokenizer_shift_moves_every_span_by_one_amount_and_keeps_the_length(items: list[WorkItem]) -> None:
    item = _item(items, "server-code", "midpoint")
    faulted = _apply(item, "tokenizer-shift")
    assert faulted.prompt.prompt_tokens == item.prompt.prompt_tokens and not faulted.lost
    shifts = {
        after.token_start - before.token_start
        for before, after in zip(item.prompt.spans, faulted.prompt.spans, strict=True)
    }
    (shift,) = shifts
    haystack = _end(item.prompt) - item.prompt.context_start
    assert abs(shift) >= round(faults.SHIFT_FRACTION * haystack)
    _spans_exact(item.prompt, faulted.prompt, BACKEND.tokenizer())
    _frame_kept(item.prompt, faulted.prompt)
    assert sorted(faulted.prompt.token_ids) == sorted(item.prompt.token_ids)  # the same tokens, moved


def test_reorder_permutes_blocks_seeded_and_keeps_every_token(items: list[WorkItem]) -> None:
    item = _item(items, "server-code", "early-middle")
    faulted = _apply(item, "reorder")
    assert faulted.prompt.token_ids != item.prompt.token_ids
    assert sorted(faulted.prompt.token_ids) == sorted(item.prompt.token_ids) and not faulted.lost
    _spans_exact(item.prompt, faulted.prompt, BACKEND.tokenizer())
    assert _apply(item, "reorder").prompt == faulted.prompt  # seeded: the same every time
    other = inject(
        parse_faults(["reorder"]), item.prompt, item.case, item.layout, BACKEND.tokenizer(), seed=1
    )
    assert {s.evidence_id for s in other.prompt.spans} == {s.evidence_id for s in item.prompt.spans}


def test_add_passage_keeps_the_length_and_moves_the_evidence_later(items: list[WorkItem]) -> None:
    item = _item(items, "harbour-master", "beginning")
    faulted = _apply(item, "add-passage")
    tokenizer = BACKEND.tokenizer()
    passage = len(tokenizer.encode(faults.SAFETY_PASSAGE))
    assert not faulted.lost
    assert abs(faulted.prompt.prompt_tokens - item.prompt.prompt_tokens) < 40  # whole lines displaced
    assert faulted.prompt.spans[0].token_start == item.prompt.spans[0].token_start + passage
    assert faulted.prompt.messages[-1]["content"].count("Safety and acceptable use notice") == 1
    _spans_exact(item.prompt, faulted.prompt, tokenizer)
    short = _item(items, "harbour-master", "beginning", 300)
    with pytest.raises(FaultRefused, match="add-passage needs"):
        _apply(short, "add-passage")


def test_duplicate_distractor_copies_the_decoy_once_more(items: list[WorkItem]) -> None:
    item = _item(items, "server-code", "midpoint")
    decoy = next(e for e in item.case.evidence if e.role == "decoy")
    faulted = _apply(item, "duplicate-distractor")
    content = faulted.prompt.messages[-1]["content"]
    assert content.count(decoy.text) == item.prompt.messages[-1]["content"].count(decoy.text) + 1
    assert faulted.prompt.prompt_tokens > item.prompt.prompt_tokens and not faulted.lost
    _spans_exact(item.prompt, faulted.prompt, BACKEND.tokenizer())


def test_smaller_window_refuses_a_prompt_that_does_not_fit_and_keeps_one_that_does(
    items: list[WorkItem],
) -> None:
    long, short = _item(items, "server-code", "end"), _item(items, "server-code", "end", 300)
    with pytest.raises(FaultRefused, match="window is 450 tokens"):
        _apply(long, "smaller-window", window=450, max_tokens=32)
    assert _apply(short, "smaller-window", window=450, max_tokens=32).prompt == short.prompt
    assert faults.window_for(parse_faults(["smaller-window"]), 600) == 450
    assert faults.window_for(parse_faults(["smaller-window=1000"]), 600) == 1000


def test_faults_parse_comma_separated_and_refuse_bad_input() -> None:
    assert [f.label for f in parse_faults(["trim-head=0.4,reorder", "smaller-window=4096"])] == [
        "trim-head=0.4",
        "reorder",
        "smaller-window=4096",
    ]
    assert Fault.parse("trim-tail").value is None
    for bad, message in (
        ("truncate", "unknown fault"),
        ("reorder=2", "takes no value"),
        ("trim-head=1.5", "fraction"),
        ("smaller-window=0.5", "whole number"),
    ):
        with pytest.raises(BadInput, match=message):
            parse_faults([bad])
    with pytest.raises(BadInput, match="given twice"):
        parse_faults(["reorder", "reorder"])
