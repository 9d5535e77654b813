"""The gold answer's readings on the call path: which score a run keeps, the answer readings with
their lead-in, their tokens and the columns a reading gives a row."""

from __future__ import annotations

import math

import pytest

from rotscope.answer_kinds import answer_readings
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.errors import BadInput
from rotscope.execution.calls.likelihood import likelihood_columns, run_score, tokenized_reading
from rotscope.tokenizers.local import FakeTokenizer
from rotscope.types import Case, Evidence, Likelihood, Oracle


def _case(answer: str = "4817", evidence: str = "The access code for the Vellmoor archive is 4817.") -> Case:
    return Case(
        case_id="c1",
        task="niah",
        evidence=(Evidence(evidence_id="needle", text=evidence),),
        question="What is the access code for the Vellmoor archive?",
        oracle=Oracle(answer=answer, aliases=("4,817",)),
    )


def test_the_run_keeps_both_where_the_backend_reads_likelihoods_else_accuracy() -> None:
    local = FakeBackend("lexical", lexical_responder())
    remote = FakeBackend("lexical", lexical_responder(), provider="fake-remote")
    assert run_score(None, local) == "both"
    assert run_score(None, remote) == "accuracy"
    assert run_score("likelihood", local) == "likelihood"
    assert run_score("accuracy", remote) == "accuracy"


@pytest.mark.parametrize("asked", ["likelihood", "both"])
def test_a_likelihood_asked_of_a_backend_that_cannot_is_refused_naming_it(asked: str) -> None:
    remote = FakeBackend("lexical", lexical_responder(), provider="fake-remote")
    with pytest.raises(BadInput, match=f"--score {asked}: the fake-remote backend cannot"):
        run_score(asked, remote)


def test_a_reading_has_the_evidence_sentences_words_before_the_answer_as_its_lead_in() -> None:
    readings = answer_readings(_case())
    assert readings[0] == ("The access code for the Vellmoor archive is", " 4817")
    assert readings[1] == ("", "4,817")  # an alias no piece states is read alone


def test_the_lead_in_starts_at_its_sentence_and_line() -> None:
    case = _case("Orla", "Notes from the survey.\nIt rained. The keeper of the light is Orla.")
    assert answer_readings(case)[0] == ("The keeper of the light is", " Orla")


def test_an_evidence_absent_control_reads_its_cases_answer() -> None:
    case = _case()
    control = case.absent_control(answer_readings(case))
    assert control.oracle.abstain and not control.evidence
    assert answer_readings(control) == answer_readings(case)


def _asked(oracle: Oracle) -> Case:
    return Case(case_id="c", task="t", evidence=(), question="q", oracle=oracle)


def test_each_kind_is_read_as_its_scorer_says_a_right_reply_states_it() -> None:
    assert answer_readings(_asked(Oracle(answer="12", kind="number"))) == (("", "Answer: 12"),)
    assert answer_readings(_asked(Oracle(answer="a, b", kind="set", items=("a", "b")))) == (("", "a, b"),)
    assert answer_readings(_asked(Oracle(answer="", abstain=True))) == ()
    assert answer_readings(_asked(Oracle(answer="cite", kind="instruction"))) == ()


def test_the_lead_in_is_counted_in_the_models_own_tokens() -> None:
    tokenizer = FakeTokenizer()
    ids, lead = tokenized_reading("The code is", " 4817", tokenizer)
    assert ids == tuple(tokenizer.encode("The code is 4817"))
    assert lead == len(tokenizer.encode("The code is"))
    assert tokenized_reading("", "4817", tokenizer)[1] == 0


def test_the_columns_take_the_best_readings_answer_tokens_only() -> None:
    read = Likelihood(token_logprobs=((-5.0, -0.1, -0.2), (-0.5, -3.0)), prompt_tokens=10)
    columns = likelihood_columns(read, (1, 0))
    assert columns["answer_logprob"] == pytest.approx(
        -0.3
    )  # -0.3 beats -3.5; the lead-in's -5 is not counted
    assert columns["answer_tokens"] == 2
    assert columns["first_token_prob"] == pytest.approx(math.exp(-0.1))


def test_a_failed_or_missing_reading_leaves_the_columns_unknown() -> None:
    empty = {"answer_logprob": None, "answer_tokens": None, "first_token_prob": None}
    assert likelihood_columns(None) == empty
    assert likelihood_columns(Likelihood(error="boom")) == empty
