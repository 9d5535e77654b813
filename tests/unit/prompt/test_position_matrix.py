"""The position matrix of case-file cases: named positions and absolute offsets across lengths,
one evidence block whose bytes and order never change, the evidence-only control, and the check
that rejects a case whose layouts differ in anything but padding."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.prompt.builder import PromptBuilder
from rotscope.types import Case, Layout, RenderedPrompt, Span, Tokenizer, WorkItem
from tests.support.case_helpers import CASES, POSITIONS, case_config, plan_for


def _pieces(item: WorkItem, tokenizer: Tokenizer) -> list[tuple[str, str]]:
    ids = item.prompt.token_ids
    return [
        (span.evidence_id, tokenizer.decode(ids[span.token_start : span.token_end]).strip("\n"))
        for span in sorted(item.prompt.spans, key=lambda span: span.token_start)
    ]


def test_offsets_are_validated() -> None:
    assert build_config({"depths": ["@0", "@1200", "midpoint"]}).offsets() == [0, 1200]
    for bad in ("@", "@-3", "@1.5", "@12k"):
        with pytest.raises(BadInput, match="depths"):
            build_config({"depths": [bad]})


def test_named_positions_and_offsets_across_lengths(tmp_path: Path) -> None:
    plan = plan_for(case_config(tmp_path, depths=[*POSITIONS, "@40", "@100000"]))
    probes = [item for item in plan.items if not item.case.control]
    cells = {(item.case.case_id, item.layout.length_tokens, item.layout.position) for item in probes}
    assert len(cells) == 2 * 2 * 6
    assert len(plan.rejected) == 4 and all("@100000" in reason for reason in plan.rejected)
    for item in probes:
        prompt = item.prompt
        first = min(prompt.spans, key=lambda span: span.token_start)
        filler_before = first.token_start - prompt.context_start
        if item.layout.position == "@40":
            assert abs(filler_before - 40) <= 0.1 * prompt.haystack_tokens
            assert item.layout.depth == pytest.approx(40 / prompt.haystack_tokens)
        else:
            assert abs(filler_before / prompt.haystack_tokens - item.layout.depth) <= 0.1


def test_evidence_is_one_block_in_file_order_at_every_layout(tmp_path: Path) -> None:
    backend = FakeBackend("lexical", lexical_responder())
    plan = plan_for(case_config(tmp_path), backend)
    items = [i for i in plan.items if i.case.case_id.startswith("server-code") and i.case.evidence]
    assert len(items) == 2 * 5 + 1
    expected = [(d["id"], d["text"]) for d in [*CASES[0]["documents"], *CASES[0]["distractors"]]]
    for item in items:
        assert _pieces(item, backend.tokenizer()) == expected
        spans = sorted(item.prompt.spans, key=lambda span: span.token_start)
        assert all(a.token_end == b.token_start for a, b in itertools.pairwise(spans))
    assert [span.depth for span in items[0].prompt.spans] == [items[0].prompt.spans[0].depth] * 3


def test_evidence_only_control_has_no_padding(tmp_path: Path) -> None:
    plan = plan_for(case_config(tmp_path))
    alone = [item for item in plan.items if item.layout.position == "evidence-only"]
    assert sorted(item.case.case_id for item in alone) == ["harbour-master~evidence", "server-code~evidence"]
    for item in alone:
        assert item.case.control and item.case.evidence_only
        assert item.prompt.haystack_tokens == 0
        assert item.prompt.prompt_tokens == pytest.approx(item.layout.length_tokens, abs=2)
        assert item.case.oracle == next(
            i.case.oracle for i in plan.items if i.case.case_id == item.case.case_id[:-9]
        )
    assert not plan.rejected


def test_a_case_without_evidence_has_no_evidence_only_control(tmp_path: Path) -> None:
    bare = {"case_id": "bare", "question": "Who is the Quenby harbour master?", "abstain": True}
    plan = plan_for(case_config(tmp_path, [bare, CASES[0]]))
    assert not plan.rejected
    alone = [item.case.case_id for item in plan.items if item.layout.position == "evidence-only"]
    assert alone == ["server-code~evidence"]


def test_controls_off_by_default(tmp_path: Path) -> None:
    plan = plan_for(case_config(tmp_path, evidence_only=False))
    assert not [item for item in plan.items if item.layout.position == "evidence-only"]


def test_a_variant_that_changes_more_than_padding_rejects_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault: one layout of one case is rendered with a reworded question."""
    render = PromptBuilder.render

    def faulty(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        if case.case_id == "server-code" and layout == Layout(600, 0.5, "midpoint"):
            case = replace(case, question=case.question.replace("current", "latest"))
        return render(self, case, layout)

    monkeypatch.setattr(PromptBuilder, "render", faulty)
    plan = plan_for(case_config(tmp_path))
    assert not [item for item in plan.items if item.case.case_id.startswith("server-code")]
    assert [item for item in plan.items if item.case.case_id.startswith("harbour-master")]
    (reason,) = set(plan.rejected)
    assert "server-code" in reason and "question" in reason and "length 600 midpoint" in reason
    # one rejection per layout of the case (its probes and controls), each in the cell it would fill
    probes = [r for r in plan.rejections if not r.control]
    assert {r.case_ids for r in plan.rejections} <= {("server-code",), ("server-code~absent",),
                                                     ("server-code~evidence",)}  # fmt: skip
    assert len({(r.length, r.depth, r.position) for r in probes}) == len(probes) > 1


def test_bundled_case_file_cases_stay_one_block(tmp_path: Path) -> None:
    second = {
        "case_id": "gate-code",
        "question": "What is the Tamsin gate code?",
        "documents": [{"id": "gate-1", "text": "The Tamsin gate code is 5513.", "claims": ["gate"]}],
        "distractors": [{"id": "gate-2", "text": "The Tamsin gate closes at dusk."}],
        "claims": {"gate": ["5513"]},
        "required_claims": ["gate"],
    }
    config = case_config(tmp_path, [CASES[0], second], questions_per_prompt=2, evidence_only=False)
    plan = plan_for(config)
    assert not plan.rejected
    probes = [item for item in plan.items if not item.case.control]
    assert len(probes) == 2 * 5 and all(item.case.grouped and len(item.case.parts) == 2 for item in probes)
    orders = {tuple(span.evidence_id for span in sorted(i.prompt.spans, key=start)) for i in probes}
    assert len(orders) == 1


def start(span: Span) -> int:
    return span.token_start
