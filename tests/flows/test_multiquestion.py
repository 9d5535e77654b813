"""Multi-question prompts: a strict output contract, a row and score per question, a cluster per prompt."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.scoring.deterministic import parse_labelled_answers, score_parts
from rotscope.store import RunStore
from rotscope.tasks import get_task
from rotscope.tasks.bundles import bundle_all, bundle_cases
from rotscope.types import Case, Completion, GenerateRequest

LABELS = ["Q1", "Q2", "Q3"]


@pytest.mark.parametrize(
    "reply",
    [
        "Q1: a\nQ2: b",  # a line missing
        "Q1: a\nQ2: b\nQ3: c\nQ4: d",  # a label that was not asked
        "Q1: a\nQ1: b\nQ3: c",  # a label twice
        "Here you go:\nQ1: a\nQ2: b\nQ3: c",  # prose around the lines
        "1: a\n2: b\n3: c",  # no Q prefix
        "Q1 a\nQ2: b\nQ3: c",  # no colon
        "",
    ],
)
def test_contract_rejects_malformed_replies(reply: str) -> None:
    assert parse_labelled_answers(reply, LABELS) is None


def test_contract_reads_each_line_in_any_order() -> None:
    reply = "\nQ3: 4817\n\nQ1:  Tamsin Orvendale \nQ2: not in the context\n"
    assert parse_labelled_answers(reply, LABELS) == {
        "Q1": "Tamsin Orvendale",
        "Q2": "not in the context",
        "Q3": "4817",
    }


def _niah(count: int) -> list[Case]:
    return list(get_task("niah").cases())[:count]


def test_bundle_asks_in_an_order_other_than_the_evidence() -> None:
    cases = _niah(3)
    bundle = bundle_cases(cases, random.Random(0))
    evidence_order = [e.evidence_id.split("/")[0] for e in bundle.evidence]
    asked_order = [part.case_id for _, part in bundle.parts]
    assert evidence_order == [c.case_id for c in cases]
    assert sorted(asked_order) == sorted(evidence_order) and asked_order != evidence_order
    assert [label for label, _ in bundle.parts] == LABELS
    for label, part in bundle.parts:
        assert f"{label}: {part.question}" in bundle.question
    assert set(bundle.guarded) == {g for c in cases for g in c.guarded}
    control = bundle.absent_control()
    assert control.evidence == () and all(part.oracle.abstain for _, part in control.parts)


def test_bundle_all_groups_per_family_and_keeps_singles() -> None:
    cases = _niah(5) + list(get_task("nolima").cases())[:2]
    bundles = bundle_all(cases, 2, seed=0)
    assert [len(b.parts) for b in bundles] == [2, 2, 0, 2]
    assert bundle_all(cases, 1, seed=0) == cases


def test_a_format_violation_scores_every_question_as_format() -> None:
    bundle = bundle_cases(_niah(2), random.Random(1))
    scores = score_parts(bundle, Completion("The answers are 4817 and Tamsin Orvendale."))
    assert [(s.outcome, s.category) for s in scores] == [("incorrect", "format")] * 2
    errors = score_parts(bundle, Completion("", error="timeout"))
    assert [s.outcome for s in errors] == ["error", "error"]


def _labelled_lexical(request: GenerateRequest) -> str:
    """Answers each labelled question with the string matcher, one contract line each."""
    content = request.messages[-1]["content"]
    questions = re.findall(r"^(Q\d+): (.*)$", content.split("Questions:\n", 1)[1], flags=re.MULTILINE)
    lines = []
    for label, question in questions:
        single = {
            "role": "user",
            "content": content.split("</context>")[0] + f"</context>\nQuestion: {question}",
        }
        answer = lexical_responder()(GenerateRequest((single,), (), request.params))
        lines.append(f"{label}: {answer}")
    return "\n".join(lines)


def _two_per_prompt(tmp_path: Path, **fields: object) -> ExperimentConfig:
    corpus = tmp_path / "log.txt"
    corpus.write_text("\n".join(f"pump {i % 13} inspected." for i in range(3000)), encoding="utf-8")
    base = {"tasks": ["niah"], "questions_per_prompt": 2, "lengths": [400]}
    return build_config({**base, **fields, "filler": {"kind": "text", "glob": str(corpus)}})


def test_rows_per_question_and_one_cluster_per_prompt(tmp_path: Path) -> None:
    config = _two_per_prompt(tmp_path, limit=4, depths=[0.0, 1.0])
    backend = FakeBackend("labelled", _labelled_lexical)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=backend)
    # 2 prompts x 2 depths + 2 control prompts: 6 calls, 2 questions each.
    assert backend.calls == 6
    store = RunStore.open_existing(run_dir)
    try:
        rows = store.rows()
    finally:
        store.close()
    assert len(rows) == 12
    assert len({row["call_id"] for row in rows}) == 6
    probes = [row for row in rows if not row["control"]]
    assert all(row["outcome"] == "correct" for row in probes)
    for row in probes:
        assert [span["evidence_id"].split("/")[0] for span in json.loads(row["spans"])] == [row["case_id"]]
    summary = load_summary(run_dir).model_dump()
    cell = next(c for c in summary["cells"] if c["depth"] == 0.0)
    assert (cell["n"], cell["instances"], cell["correct"]) == (4, 2, 4)


def test_broken_contract_rows_are_format_not_guessed(tmp_path: Path) -> None:
    config = _two_per_prompt(tmp_path, limit=2, depths=[0.5], controls=False)
    answers = " ".join(case.oracle.answer for case in _niah(2))
    run_dir = run_experiment(
        config, run_dir=tmp_path / "run", backend=FakeBackend("prose", lambda _: answers)
    )
    summary = load_summary(run_dir).model_dump()
    (cell,) = summary["cells"]
    assert (cell["n"], cell["correct"], cell["categories"]) == (2, 0, {"format": 2})
