"""The position matrix of case-file cases: named positions and absolute offsets across lengths,
one evidence block whose bytes and order never change, the evidence-only control, and the check
that rejects a case whose layouts differ in anything but padding."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.layout import PromptBuilder
from rotscope.types import Case, Layout, RenderedPrompt, Tokenizer, WorkItem
from rotscope.workitems import Plan, build_plan

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")
CASES = [
    {
        "case_id": "server-code",
        "question": "What is the current Tamsin server room code?",
        "documents": [
            {
                "id": "memo-3",
                "text": "Memo of 3 March: the Tamsin server room code is 4471.",
                "claims": ["old"],
            },
            {
                "id": "memo-9",
                "text": "Memo of 9 May, replacing earlier memos: the code is 8820.",
                "claims": ["new"],
            },
        ],
        "distractors": [{"id": "memo-1", "text": "The Tamsin canteen opens at noon."}],
        "claims": {"new": ["8820"], "old": ["4471"]},
        "required_claims": ["new"],
        "forbidden_claims": ["old"],
        "slices": {"risk": "high", "hops": "multi"},
    },
    {
        "case_id": "harbour-master",
        "question": "Who is the Sorrel Bay harbour master?",
        "distractors": [{"id": "port-2", "text": "The harbour master of Pellow Bay is Garth Imrie."}],
        "claims": {"imrie": ["Garth Imrie"]},
        "forbidden_claims": ["imrie"],
        "abstain": True,
        "slices": {"risk": "low", "hops": "single"},
    },
]
POSITIONS = ["beginning", "early-middle", "midpoint", "late-middle", "end"]


def nonsense_corpus(folder: Path) -> Path:
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(3):
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(4)) for _ in range(80))
        (folder / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return folder


def case_config(tmp_path: Path, records: list[dict[str, Any]] = CASES, **fields: Any) -> ExperimentConfig:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    data: dict[str, Any] = {
        "model": "fake/lexical",
        "tasks": ["cases"],
        "cases": str(cases),
        "lengths": [300, 600],
        "depths": POSITIONS,
        "evidence_only": True,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


def plan_for(config: ExperimentConfig, backend: FakeBackend | None = None) -> Plan:
    return build_plan(config, backend or FakeBackend("lexical", lexical_responder()))


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
    (reason,) = plan.rejected
    assert "server-code" in reason and "question" in reason and "length 600 midpoint" in reason
