"""Deterministic scoring: normalisation, whole-word matching, abstention, controls, errors."""

from __future__ import annotations

import pytest

from rotscope.scoring.deterministic import contains_answer, is_abstention, normalise, score
from rotscope.types import Completion, Oracle, Score

CONTROL = Oracle(answer="", abstain=True)


def _reply(text: str) -> Completion:
    return Completion(text=text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Tamsin ORVENDALE", "tamsin orvendale"),
        ("Tamsin Orvendale.", "tamsin orvendale"),
        ("  The code: 4817!  ", "the code 4817"),
        ("4,817", "4817"),
        ("1,234,567 barrels", "1234567 barrels"),
        ("4_817", "4817"),
        ("seven", "7"),
        ("Twelve comets", "12 comets"),
        ("Orvendalé", "orvendale"),
        ("KESTRA-9", "kestra-9"),
        ("- dash -", "dash"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_comma_not_followed_by_a_group_of_three_is_kept_apart() -> None:
    # "4,8170" is not digit grouping (the group after the comma has four digits).
    assert normalise("4,8170") == "4 8170"


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("The access code is 4817.", "4817"),
        ("The access code is 4,817.", "4817"),
        ("4817", "4,817"),
        ("It is seven.", "7"),
        ("7", "seven"),
        ("TAMSIN ORVENDALE", "Tamsin Orvendale"),
        ("the label reads kestra-9", "KESTRA-9"),
        ("Label: KESTRA-9.", "KESTRA-9"),
        ("Ilsabet Cormandy founded it", "Ilsabet Cormandy"),
    ],
)
def test_contains_answer_matches(response: str, answer: str) -> None:
    assert contains_answer(response, answer)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("The code is 48170.", "4817"),
        ("The code is 14817.", "4817"),
        ("The code is 48,170.", "4817"),
        ("The label is KESTRA-95.", "KESTRA-9"),
        ("The label is XKESTRA-9.", "KESTRA-9"),
        ("The label is KESTRA-9-B.", "KESTRA-9"),
        ("Tamsin Orvendales", "Tamsin Orvendale"),
        ("anything at all", ""),
        ("anything at all", "..."),
    ],
)
def test_contains_answer_is_whole_word(response: str, answer: str) -> None:
    assert not contains_answer(response, answer)


@pytest.mark.parametrize(
    "response",
    [
        "not in the context",
        "Not in the context.",
        "The context does not mention this.",
        "The context doesn't say.",
        "It is not stated anywhere.",
        "There is no information about that.",
        "I cannot determine the answer.",
        "I can't find it.",
        "Unknown.",
        "I don’t know.",  # typographic apostrophe
        "I do not know",
    ],
)
def test_abstention_phrases(response: str) -> None:
    assert is_abstention(response)


@pytest.mark.parametrize("response", ["4817", "Tamsin Orvendale", "The answer is KESTRA-9.", ""])
def test_answers_are_not_abstentions(response: str) -> None:
    assert not is_abstention(response)


def test_correct_answer() -> None:
    oracle = Oracle(answer="4817", aliases=("4,817",))
    assert score(oracle, _reply("The access code is 4,817.")) == Score("correct")


def test_alias_counts_as_correct() -> None:
    oracle = Oracle(answer="Vellmoor Archive", aliases=("the archive at Vellmoor",))
    assert score(oracle, _reply("It is the archive at Vellmoor.")).outcome == "correct"


def test_wrong_answer_is_incorrect() -> None:
    assert score(Oracle(answer="4817"), _reply("48170")) == Score("incorrect", "wrong_answer")


def test_abstention_on_a_probe_is_abstained() -> None:
    assert score(Oracle(answer="4817"), _reply("Not in the context.")) == Score("abstained", "abstained")


def test_blank_reply_on_a_probe_is_abstained() -> None:
    assert score(Oracle(answer="4817"), _reply("   ")).outcome == "abstained"


def test_control_abstention_is_correct() -> None:
    assert score(CONTROL, _reply("The context does not say.")) == Score("correct")


@pytest.mark.parametrize("response", ["4817", "Tamsin Orvendale", "It is KESTRA-9."])
def test_control_answer_is_hallucinated(response: str) -> None:
    assert score(CONTROL, _reply(response)) == Score("incorrect", "hallucinated")


@pytest.mark.parametrize("oracle", [Oracle(answer="4817"), CONTROL])
@pytest.mark.parametrize("text", ["", "4817", "not in the context"])
def test_errors_are_never_scored(oracle: Oracle, text: str) -> None:
    result = score(oracle, Completion(text=text, error="RuntimeError: engine died"))
    assert result.outcome == "error"
    assert result.outcome not in ("correct", "incorrect")


@pytest.mark.parametrize(
    ("oracle", "text"),
    [
        (Oracle(answer="4817"), "4817"),
        (Oracle(answer="4817"), "1234"),
        (Oracle(answer="4817"), "unknown"),
        (CONTROL, "unknown"),
        (CONTROL, "4817"),
    ],
)
def test_exactly_one_outcome(oracle: Oracle, text: str) -> None:
    assert score(oracle, _reply(text)).outcome in ("correct", "incorrect", "abstained")
