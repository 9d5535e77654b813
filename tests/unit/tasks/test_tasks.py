"""Task families: case counts, identities, oracles, NoLiMa's no-overlap promise, controls."""

from __future__ import annotations

import pytest

from rotscope._util.text import content_stems, shared_content_words, stem
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.plan.workitems import select_cases
from rotscope.scoring.deterministic import contains_answer
from rotscope.tasks import get_task
from rotscope.tasks import nolima as nolima_module
from rotscope.types import Case, Evidence, Oracle

FAMILIES = ("niah", "nolima")


def _cases(name: str) -> list[Case]:
    return list(get_task(name).cases())


@pytest.mark.parametrize("name", FAMILIES)
def test_at_least_twelve_cases(name: str) -> None:
    assert len(_cases(name)) >= 12


@pytest.mark.parametrize("name", FAMILIES)
def test_cases_belong_to_their_family(name: str) -> None:
    family = get_task(name)
    assert family.name == name
    assert all(case.task == name for case in family.cases())


def test_case_ids_are_unique_across_families() -> None:
    ids = [case.case_id for name in FAMILIES for case in _cases(name)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", FAMILIES)
def test_each_case_has_one_needle_and_a_question(name: str) -> None:
    for case in _cases(name):
        assert len(case.evidence) == 1, case.case_id
        assert case.evidence[0].text.strip() == case.evidence[0].text
        assert "\n" not in case.evidence[0].text
        assert case.question.strip().endswith("?"), case.case_id
        assert not case.control
        assert not case.oracle.abstain


@pytest.mark.parametrize("name", FAMILIES)
def test_answer_is_inside_the_needle(name: str) -> None:
    for case in _cases(name):
        needle = case.evidence[0].text
        assert case.oracle.answer, case.case_id
        assert case.oracle.answer in needle, case.case_id
        # The scorer must also accept the needle itself as a reply carrying the answer.
        assert contains_answer(needle, case.oracle.answer), case.case_id


@pytest.mark.parametrize("name", FAMILIES)
def test_answer_is_not_given_away_by_the_question(name: str) -> None:
    for case in _cases(name):
        assert not contains_answer(case.question, case.oracle.answer), case.case_id


def test_niah_questions_repeat_the_needle_words() -> None:
    # niah is the lexical baseline: a string matcher must be able to find the needle.
    for case in _cases("niah"):
        assert len(shared_content_words(case.question, case.evidence[0].text)) >= 2, case.case_id


def test_nolima_questions_share_no_content_word_with_the_needle() -> None:
    for case in _cases("nolima"):
        assert shared_content_words(case.question, case.evidence[0].text) == set(), case.case_id


def test_overlap_finds_shared_stems() -> None:
    shared = shared_content_words("Which character visited Rome?", "Marisol visits Rome every spring.")
    assert shared == {"visit", "rome"}


def test_overlap_ignores_stop_words() -> None:
    assert shared_content_words("Who is the one at the end?", "It is the one at the start.") == set()


@pytest.mark.parametrize(
    ("word", "expected"),
    [("clocks", "clock"), ("visited", "visit"), ("painting", "paint"), ("boxes", "box"), ("bus", "bus")],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_content_stems_lowercases_and_splits_on_punctuation() -> None:
    assert content_stems("The Eiffel-Tower, in ROME!") == {"eiffel", "tower", "rome"}


def test_nolima_rejects_a_case_that_overlaps(monkeypatch: pytest.MonkeyPatch) -> None:
    crafted = Case(
        case_id="nolima-bad",
        task="nolima",
        evidence=(Evidence("needle", "Marisol Quenby visited the Colosseum in Rome."),),
        question="Which character visited Rome?",
        oracle=Oracle(answer="Marisol Quenby"),
    )
    monkeypatch.setattr(nolima_module, "load_needle_cases", lambda task: [crafted])
    with pytest.raises(ValueError, match="nolima-bad") as raised:
        list(nolima_module.build_nolima_cases())
    assert "rome" in str(raised.value) and "visit" in str(raised.value)


def test_nolima_accepts_a_crafted_case_without_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    crafted = Case(
        case_id="nolima-good",
        task="nolima",
        evidence=(Evidence("needle", "Marisol Quenby rented a flat facing the Colosseum."),),
        question="Which character has been to Italy?",
        oracle=Oracle(answer="Marisol Quenby"),
    )
    monkeypatch.setattr(nolima_module, "load_needle_cases", lambda task: [crafted])
    assert list(nolima_module.build_nolima_cases()) == [crafted]


def test_unknown_family_is_bad_input() -> None:
    with pytest.raises(BadInput, match="unknown task family 'haystack'"):
        get_task("haystack")


@pytest.mark.parametrize("name", FAMILIES)
def test_evidence_absent_controls(name: str) -> None:
    for case in _cases(name):
        control = case.absent_control()
        assert control.control
        assert control.evidence == ()
        assert control.oracle.abstain
        assert control.question == case.question
        assert control.task == case.task
        assert control.case_id != case.case_id
        assert control.case_id.startswith(case.case_id)


def test_select_cases_adds_one_control_per_case_and_respects_limit() -> None:
    config = build_config({"tasks": ["niah", "nolima"], "limit": 3})
    selected = select_cases(config)
    probes = [case for case in selected if not case.control]
    controls = [case for case in selected if case.control]
    assert [case.case_id for case in probes] == [case.case_id for case in _cases("niah")[:3]] + [
        case.case_id for case in _cases("nolima")[:3]
    ]
    assert sorted(c.case_id for c in controls) == sorted(c.absent_control().case_id for c in probes)
    assert all(not c.evidence and c.oracle.abstain for c in controls)


def test_select_cases_without_controls() -> None:
    config = build_config({"tasks": ["nolima"], "limit": 2, "controls": False})
    selected = select_cases(config)
    assert len(selected) == 2
    assert not any(case.control for case in selected)
