"""Each answer kind's completion rule (``generation.stop: answer``) and its reply budget: where a
reply is cut, where it is not, and that the cut reply scores as the whole one did."""

from __future__ import annotations

import pytest

from rotscope.answer_kinds import SCORERS, answer_stop, kind_info, reply_budget
from rotscope.answer_stop import answer_end, answer_line_end
from rotscope.config.experiment import build_config
from rotscope.execution.state.identity import config_digest, config_fields, identity_fields
from rotscope.types import AnswerStop, Case, Completion, Evidence, Oracle


def _case(kind: str, answer: str = "4817", **oracle: object) -> Case:
    return Case(
        task="t",
        case_id="c",
        evidence=(Evidence("e1", "The access code for the Vellmoor archive is 4817."),),
        question="What is the access code?",
        oracle=Oracle(answer=answer, kind=kind, **oracle),  # type: ignore[arg-type]
    )


def _cut(kind: str, reply: str) -> str:
    stop = kind_info(kind).stop
    assert stop is not None
    end = answer_end(reply, stop)
    return reply if end is None else reply[:end]


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("The access code is 4817.\n\nQuestion: What is", "The access code is 4817"),
        ("The access code is 4817.", "The access code is 4817."),  # ended by the model: nothing to cut
        ("The access code is:\n\n4817.\nMore", "The access code is:\n\n4817"),  # the value on the next line
        ("\nKESTRA-9.\nThe end", "\nKESTRA-9"),  # a leading line break is no sentence
        ("Dr. Quenby visited Rome", "Dr. Quenby visited Rome"),  # a full stop inside the line
    ],
)
def test_a_phrase_reply_ends_at_its_first_sentence_that_ends_a_line(reply: str, kept: str) -> None:
    assert _cut("phrase", reply) == kept


def test_a_set_reply_ends_as_a_phrase_does_and_a_list_without_full_stops_runs_on() -> None:
    assert _cut("set", "Alder, Birch.\nAlso Cedar") == "Alder, Birch"
    assert _cut("set", "- Alder\n- Birch\n- Cedar") == "- Alder\n- Birch\n- Cedar"


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("5 + 3 = 8.\nAnswer: 8\nAnswer: 9", "5 + 3 = 8.\nAnswer: 8\n"),
        ("Answer:\n8\n", "Answer:\n8\n"),  # no value on the marker's line: not complete
        ("The answer is 12 apples\nso", "The answer is 12 apples\n"),
        ("Answer: 8", "Answer: 8"),  # the line not ended yet
        ("First, 4 pens.\nThen 4 more.\n", "First, 4 pens.\nThen 4 more.\n"),  # worked lines run on
    ],
)
def test_a_number_reply_ends_after_its_first_answer_line_that_holds_a_number(reply: str, kept: str) -> None:
    assert _cut("number", reply) == kept


def test_a_choice_reply_ends_after_its_answer_line_with_a_label_and_not_before() -> None:
    assert _cut("choice", "Option B fits.\nAnswer: B\nAnswer: C") == "Option B fits.\nAnswer: B\n"
    assert answer_line_end("Answer: the second\n", "label") is None
    assert answer_line_end("Answer: 8\n", "label") == len("Answer: 8\n")


def test_the_stop_sequences_are_only_where_a_served_model_can_apply_them() -> None:
    assert kind_info("phrase").stop == AnswerStop(strings=(".\n",))
    assert kind_info("number").stop == AnswerStop(answer_line="digits")
    assert kind_info("number").stop.strings == ()  # type: ignore[union-attr]
    # a copied turn and a rule to follow are read whole: no completion rule
    assert kind_info("reply").stop is None and kind_info("instruction").stop is None


def test_the_earliest_end_wins_when_a_rule_has_both() -> None:
    stop = AnswerStop(strings=("\n\n",), answer_line="digits")
    assert answer_end("Answer: 3\nmore\n\nrest", stop) == len("Answer: 3\n")
    assert answer_end("So\n\nAnswer: 3\n", stop) == len("So")
    assert answer_end("nothing yet", stop) is None


@pytest.mark.parametrize(
    ("kind", "full", "answer"),
    [
        ("phrase", "The access code is 4817.\nIt is not in the context.", "4817"),  # the hedge comes after
        ("phrase", "The code is 1234.\nOr 4817.", "4817"),
        ("number", "4 + 4 = 8.\nAnswer: 8\nAnswer: 9", "8"),
    ],
)
def test_a_reply_cut_at_its_answer_is_scored_on_the_answer_it_gave_first(
    kind: str, full: str, answer: str
) -> None:
    case = _case(kind, answer)
    cut = _cut(kind, full)
    whole = SCORERS.get(kind)(case, Completion(text=full), None)
    first = SCORERS.get(kind)(case, Completion(text=cut), None)
    # The cut reply is what a model that stops there said: its first answer, not a later one.
    assert cut != full and first.outcome != whole.outcome


def test_a_reply_budget_is_the_users_where_given_else_the_kinds_size() -> None:
    assert reply_budget(_case("phrase"), None) == 32
    assert reply_budget(_case("set", "a, b", items=("a", "b")), None) == 96
    assert reply_budget(_case("number"), None) == 256
    assert reply_budget(_case("reply", "x", items=("CODE",)), None) == 32  # sizes none: the default
    assert reply_budget(_case("number"), 24) == 24  # generation.max_tokens wins


def test_a_prompt_of_several_questions_has_no_rule_and_a_budget_per_question() -> None:
    one = _case("phrase")
    several = Case(
        task="t",
        case_id="m",
        evidence=one.evidence,
        question="Q1 / Q2",
        oracle=one.oracle,
        parts=(("Q1", one), ("Q2", _case("number"))),
    )
    assert answer_stop(one) == AnswerStop(strings=(".\n",))
    assert answer_stop(several) is None
    assert reply_budget(several, None) == 32 + 256


def test_an_unset_budget_keeps_the_config_digest_and_the_folder_identity_names_it() -> None:
    """The digest and a frozen plan's config read an unset ``generation.max_tokens`` as the one
    budget every reply had before; a run folder's identity tells the two apart."""
    unset, old = build_config({"name": "x"}), build_config({"name": "x", "generation": {"max_tokens": 32}})
    assert unset.generation.max_tokens is None
    assert config_digest(unset) == config_digest(old)
    assert config_fields(unset)["generation"]["max_tokens"] == 32
    assert config_digest(build_config({"name": "x", "generation": {"max_tokens": 64}})) != config_digest(old)
    assert identity_fields(unset)["generation"]["max_tokens"] is None
    assert identity_fields(old)["generation"]["max_tokens"] == 32
