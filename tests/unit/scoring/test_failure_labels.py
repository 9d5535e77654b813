"""Failure labels blame the filler only for what came from it (issue 15, "Numbers you can
defend"): ``context_value`` and ``filler_number`` are matched against the filler text alone, a
reply that states the answer and also abstains is ``hedged`` (never correct), and the terminal
prints every share of wrong answers with its denominator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rich.console import Console

from rotscope.filler.corpus import TokenizedCorpus
from rotscope.prompt.builder import PromptBuilder
from rotscope.records.tasks import Reasoning
from rotscope.report.terminal_sections import print_reasoning
from rotscope.scoring.deterministic import score, score_parts
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import Case, Completion, Evidence, Layout, Oracle, RenderedPrompt, Score

FILLER_LINES = [
    "The ferry to Ostrava leaves at noon.",
    "Valve 3 was checked twice by the night crew.",
    "A parcel of tea arrived from the southern port.",
]
QUESTION = "What is the label on the Harrowmere crate?"
CASE = Case(
    "crate",
    "niah",
    (Evidence("e0", "KESTRA-9 is the label on the Harrowmere crate."),),
    QUESTION,
    Oracle("KESTRA-9"),
)


@pytest.fixture
def prompt(corpus_from_text: Callable[..., TokenizedCorpus]) -> RenderedPrompt:
    tokenizer = FakeTokenizer()
    text = "\n".join(FILLER_LINES * 40)
    builder = PromptBuilder(tokenizer, corpus_from_text(text, tokenizer, 700))
    return builder.render(CASE, Layout(length_tokens=600, depth=0.5))


def _category(prompt: RenderedPrompt, reply: str) -> Score:
    (result,) = score_parts(CASE, Completion(reply), prompt.filler_text())
    return result


def test_filler_text_holds_filler_only(prompt: RenderedPrompt) -> None:
    filler = prompt.filler_text()
    assert FILLER_LINES[1] in filler
    assert QUESTION not in filler and CASE.evidence[0].text not in filler
    assert "Answer" not in filler and "<context>" not in filler


def test_a_reply_echoing_the_question_is_no_context_value(prompt: RenderedPrompt) -> None:
    assert QUESTION in prompt.messages[-1]["content"]
    assert _category(prompt, QUESTION) == Score("incorrect", "wrong_answer")
    assert _category(prompt, "the Harrowmere crate") == Score("incorrect", "wrong_answer")


def test_a_reply_quoting_a_filler_line_is_a_context_value(prompt: RenderedPrompt) -> None:
    assert _category(prompt, FILLER_LINES[1]) == Score("incorrect", "context_value")
    assert _category(prompt, "the southern port") == Score("incorrect", "context_value")


REASONING = Case(
    "r1",
    "reasoning",
    (Evidence("target", "Target problem: Voge has 23 fomis. He finds 5 more. How many now?"),),
    "Solve the target problem.",
    Oracle("28", kind="number", traps=(("filler_answer", "101"),)),
)
# A filler item shares the numbers 23 and 5 with the target; 69 is only in the filler.
REASONING_FILLER = (
    "Problem: Zil has 23 pods. It finds 5 more, then triples.\nStep 1: 28 * 3 = 69\nAnswer: 101"
)


@pytest.mark.parametrize("number", ["23", "5"])
def test_a_number_of_the_target_itself_is_no_filler_number(number: str) -> None:
    (result,) = score_parts(REASONING, Completion(f"Answer: {number}"), REASONING_FILLER)
    assert result == Score("incorrect", "wrong_answer")


def test_a_filler_items_number_is_a_filler_number() -> None:
    (result,) = score_parts(REASONING, Completion("Answer: 69"), REASONING_FILLER)
    assert result == Score("incorrect", "filler_number")
    (result,) = score_parts(REASONING, Completion("Answer: 101"), REASONING_FILLER)
    assert result == Score("incorrect", "filler_answer")


ORACLE = Oracle("KESTRA-9")


@pytest.mark.parametrize(
    "reply",
    [
        "The label KESTRA-9 is not in the context.",
        "I cannot find the label in the context, but it might be KESTRA-9.",
        "The context does not say; KESTRA-9.",
        "KESTRA-9? I don't know.",
    ],
)
def test_a_hedged_reply_is_not_correct(reply: str) -> None:
    assert score(ORACLE, Completion(reply)) == Score("incorrect", "hedged")


def test_a_hedged_final_answer_is_not_correct() -> None:
    (result,) = score_parts(REASONING, Completion("Answer: 28 (the count is not stated)"), REASONING_FILLER)
    assert result == Score("incorrect", "hedged")
    # Words of abstention on the way to the answer are no hedge: only the answer line counts.
    worked = "The total is not given directly.\n23 + 5 = 28\nAnswer: 28"
    (result,) = score_parts(REASONING, Completion(worked), REASONING_FILLER)
    assert result == Score("correct")


@pytest.mark.parametrize("reply", ["KESTRA-9", "The label is KESTRA-9.", "kestra-9"])
def test_a_plain_right_reply_is_still_correct(reply: str) -> None:
    assert score(ORACLE, Completion(reply)) == Score("correct")


@pytest.mark.parametrize(
    "reply", ["The label is not in the context.", "I cannot find it.", "I don't know.", ""]
)
def test_a_plain_abstention_is_still_abstained(reply: str) -> None:
    assert score(ORACLE, Completion(reply)) == Score("abstained", "abstained")


def test_an_absent_control_still_wants_an_abstention() -> None:
    absent = Oracle("KESTRA-9", abstain=True)
    assert score(absent, Completion("The label is not in the context.")) == Score("correct")
    assert score(absent, Completion("ORBIT-4")) == Score("incorrect", "hallucinated")


def _entry(layout: str, wrong: int, filler_answer: int, filler_number: int, unparsed: int) -> dict[str, Any]:
    numbered = wrong - unparsed
    matched = filler_answer + filler_number
    return {
        "filler": "with_solutions", "layout": layout, "wrong": wrong, "unparsed": unparsed,
        "filler_answer": filler_answer, "filler_number": filler_number, "other": numbered - matched,
        "share_filler": matched / numbered if numbered else None,
        "share_filler_answer": filler_answer / numbered if numbered else None,
    }  # fmt: skip


def test_the_terminal_prints_every_share_with_its_denominator() -> None:
    reasoning = Reasoning.model_validate(
        {
            "drops": [],
            "interference": [
                _entry("middle", 8, 2, 1, 1),
                _entry("middle_twice", 1, 1, 0, 0),
                _entry("end", 1, 0, 0, 1),
            ],
        }
    )
    console = Console(record=True, width=200)
    print_reasoning(reasoning, console)
    shown = console.export_text()
    assert "3 of 7 wrong answers from the filler (43%)" in shown
    assert "1 of 1 wrong answer from the filler (100%)" in shown  # one answer, not a bare "100%"
    assert "no wrong answer gave a number" in shown
    assert "-> 100% from the filler" not in shown
