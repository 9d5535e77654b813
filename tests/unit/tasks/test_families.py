"""The task families competitive, latent, join and multihop: case shapes, oracles recomputed from
their sources, build-time checks, and scoring of replies that name each trap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from importlib import resources
from typing import Any

import pytest
import yaml

from rotscope.scoring.deterministic import contains_answer, score
from rotscope.tasks import get_task
from rotscope.tasks import latent as latent_module
from rotscope.types import Case, Completion

FAMILIES = ("competitive", "latent", "join", "multihop")


def _cases(name: str) -> list[Case]:
    return list(get_task(name).cases())


def _records(task: str) -> dict[str, dict[str, Any]]:
    """The shipped YAML of a family, read independently of rotscope's loader, by case id."""
    text = resources.files("rotscope.tasks").joinpath("data", f"{task}.yaml").read_text(encoding="utf-8")
    return {record["id"]: record for record in yaml.safe_load(text)}


def _whole(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole token (not inside a longer word or number)."""
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text) is not None


def _reply(text: str) -> Completion:
    return Completion(text=text)


# --- shared shape ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_family_has_enough_cases_with_unique_ids(name: str) -> None:
    family = get_task(name)
    assert family.name == name
    cases = _cases(name)
    assert len(cases) >= 12
    ids = [case.case_id for case in cases]
    assert len(ids) == len(set(ids))
    assert all(case.task == name for case in cases)


@pytest.mark.parametrize("name", FAMILIES)
def test_each_case_has_one_answer_piece_and_unique_evidence_ids(name: str) -> None:
    for case in _cases(name):
        ids = [evidence.evidence_id for evidence in case.evidence]
        assert len(ids) == len(set(ids)), case.case_id
        assert [evidence.role for evidence in case.evidence].count("answer") == 1, case.case_id
        assert not case.control and not case.oracle.abstain
        assert case.oracle.answer, case.case_id
        assert case.question.strip().endswith("?"), case.case_id
        # the answer itself is guarded: filler must never compete with it
        assert case.oracle.answer in case.guarded, case.case_id


@pytest.mark.parametrize("name", FAMILIES)
def test_absent_controls_have_no_evidence_and_expect_abstention(name: str) -> None:
    for case in _cases(name):
        control = case.absent_control()
        assert control.evidence == ()
        assert control.control
        assert control.oracle.abstain
        assert control.oracle.traps == ()
        assert control.case_id != case.case_id
        assert control.question == case.question
        assert control.guarded == case.guarded
        assert score(control.oracle, _reply("That is not in the context.")).outcome == "correct"
        assert score(control.oracle, _reply(case.oracle.answer)) == score(
            control.oracle, _reply("something else")
        )
        assert score(control.oracle, _reply(case.oracle.answer)).outcome == "incorrect"


def test_case_ids_are_unique_across_families() -> None:
    ids = [case.case_id for name in FAMILIES for case in _cases(name)]
    assert len(ids) == len(set(ids))


# --- competitive ----------------------------------------------------------------------------------


def test_competitive_has_three_decoys_with_four_distinct_values() -> None:
    records = _records("competitive")
    for case in _cases("competitive"):
        roles = [evidence.role for evidence in case.evidence]
        assert roles.count("decoy") == 3, case.case_id
        assert sorted(roles) == ["answer", "decoy", "decoy", "decoy"], case.case_id
        record = records[case.case_id]
        decoy_values = [str(decoy["value"]) for decoy in record["decoys"]]
        values = [case.oracle.answer, *decoy_values]
        assert len(set(values)) == 4, case.case_id
        assert case.oracle.answer == str(record["answer"])
        assert case.oracle.traps == tuple(("decoy", value) for value in decoy_values), case.case_id
        assert set(case.guarded) == set(values)


def test_competitive_each_value_occurs_only_in_its_own_piece() -> None:
    records = _records("competitive")
    for case in _cases("competitive"):
        record = records[case.case_id]
        texts = {evidence.evidence_id: evidence.text for evidence in case.evidence}
        owner = {"needle": case.oracle.answer}
        for number, decoy in enumerate(record["decoys"], start=1):
            assert texts[f"decoy-{number}"] == decoy["text"], case.case_id
            owner[f"decoy-{number}"] = str(decoy["value"])
        assert set(owner) == set(texts), case.case_id
        for piece_id, value in owner.items():
            for other_id, text in texts.items():
                assert _whole(text, value) == (other_id == piece_id), (case.case_id, value, other_id)
            assert not _whole(case.question, value), (case.case_id, value)


def test_competitive_scoring_names_the_decoy() -> None:
    for case in _cases("competitive"):
        assert score(case.oracle, _reply(case.oracle.answer)).outcome == "correct"
        assert score(case.oracle, _reply(f"It was {case.oracle.answer}.")).outcome == "correct"
        for _, value in case.oracle.traps:
            result = score(case.oracle, _reply(f"I noticed {value}."))
            assert (result.outcome, result.category) == ("incorrect", "decoy"), (case.case_id, value)


# --- latent ---------------------------------------------------------------------------------------


def test_latent_answer_is_anchor_times_fraction_from_the_yaml() -> None:
    records = _records("latent")
    for case in _cases("latent"):
        record = records[case.case_id]
        anchor = int(record["anchor_value"])
        product = anchor * Fraction(record["fraction"])
        assert product.denominator == 1, case.case_id
        assert case.oracle.answer == str(product.numerator), case.case_id
        assert case.oracle.answer == str(record["answer"]), case.case_id
        old = anchor * Fraction(record["superseded_fraction"])
        assert ("anchor_only", str(anchor)) in case.oracle.traps, case.case_id
        assert ("superseded", str(old.numerator)) in case.oracle.traps, case.case_id
        assert len({case.oracle.answer, str(anchor), str(old.numerator)}) == 3
        roles = {evidence.evidence_id: evidence.role for evidence in case.evidence}
        assert sorted(roles.values()) == ["answer", "superseded", "support"], case.case_id
        texts = {evidence.role: evidence.text for evidence in case.evidence}
        assert texts["support"] == record["anchor"]
        assert texts["answer"] == record["fraction_text"]
        assert texts["superseded"] == record["superseded_text"]


def test_latent_answer_is_never_written() -> None:
    for case in _cases("latent"):
        answer = case.oracle.answer
        for text in [*(evidence.text for evidence in case.evidence), case.question]:
            assert answer not in re.findall(r"\d+", text), (case.case_id, text)
            # nor as a number word the scorer would read as the answer ("nine" for 9)
            assert not contains_answer(text, answer), (case.case_id, text)


def test_latent_anchor_quantity_is_written_in_words_that_mean_the_anchor_value() -> None:
    records = _records("latent")
    for case in _cases("latent"):
        record = records[case.case_id]
        anchor_text = next(e.text for e in case.evidence if e.role == "support")
        assert record["anchor_words"] in anchor_text
        anchor_value = dict(case.oracle.traps)["anchor_only"]
        assert anchor_value not in re.findall(r"\d+", anchor_text), case.case_id
        assert latent_module.quantity_in(record["anchor_words"], record["unit"]) == int(anchor_value)


@pytest.mark.parametrize(
    ("words", "unit", "expected"),
    [
        ("one full second", "milliseconds", Fraction(1000)),
        ("three dozen", "seats", Fraction(36)),
        ("half a kilometre", "metres", Fraction(500)),
        ("ninety minutes", "hours", Fraction(3, 2)),
        ("two minutes", "seconds", Fraction(120)),
        ("a gross", "pencils", Fraction(144)),
        ("four weeks", "days", Fraction(28)),
        ("one metre", "centimetres", Fraction(100)),
    ],
)
def test_quantity_in_hand_examples(words: str, unit: str, expected: Fraction) -> None:
    assert latent_module.quantity_in(words, unit) == expected


@pytest.mark.parametrize(
    ("words", "unit"),
    [
        ("three bananas", "seats"),  # unknown word
        ("two minutes", "metres"),  # time is not length
        ("one kilogram", "litres"),  # mass is not volume
        ("one hour", "crates"),  # a unit quantity in a count
    ],
)
def test_quantity_in_rejects_unknown_words_and_incompatible_units(words: str, unit: str) -> None:
    with pytest.raises(ValueError):
        latent_module.quantity_in(words, unit)


def test_latent_scoring_names_anchor_only_and_superseded() -> None:
    for case in _cases("latent"):
        traps = dict(case.oracle.traps)
        expected = {
            case.oracle.answer: ("correct", None),
            traps["anchor_only"]: ("incorrect", "anchor_only"),
            traps["superseded"]: ("incorrect", "superseded"),
        }
        for value, wanted in expected.items():
            for reply in (value, f"The answer is {value}."):
                result = score(case.oracle, _reply(reply))
                assert (result.outcome, result.category) == wanted, (case.case_id, reply)


_GOOD_LATENT = {
    "id": "latent-test",
    "anchor": "Platform note: every call chain on the Quorra mesh gets one full second of time budget.",
    "anchor_words": "one full second",
    "anchor_value": 1000,
    "fraction_text": "The Ledgerline service may use a quarter of the Quorra mesh budget for each call.",
    "fraction": "1/4",
    "superseded_text": "An earlier revision, since replaced: Ledgerline may use half of the budget.",
    "superseded_fraction": "1/2",
    "question": "If a rule was revised, the latest revision applies. How many milliseconds per call?",
    "answer": "250",
    "unit": "milliseconds",
}


def test_latent_build_accepts_a_good_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latent_module, "load_records", lambda task: [dict(_GOOD_LATENT)])
    [case] = latent_module.build_latent_cases()
    assert case.oracle.answer == "250"
    assert dict(case.oracle.traps) == {"anchor_only": "1000", "superseded": "500"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        # the answer is written in the fraction text
        (
            {"fraction_text": "The Ledgerline service may use a quarter (250 ms) of the Quorra mesh budget."},
            "250 is written in the case",
        ),
        # the superseded value is written
        (
            {"superseded_text": "An earlier revision, since replaced: Ledgerline could use 500 ms of it."},
            "500 is written in the case",
        ),
        # anchor words say one second, the record claims 100 ms
        ({"anchor_value": 100, "answer": "25"}, "'one full second' is not 100 milliseconds"),
        # anchor words that are not in the anchor sentence
        ({"anchor_words": "two full seconds", "anchor_value": 2000, "answer": "500"}, "not in the anchor"),
        # the recorded answer disagrees with anchor x fraction
        ({"answer": "200"}, "answer must be anchor x fraction"),
        # a fraction that does not give a whole number
        ({"fraction": "1/3", "answer": "333"}, "give whole numbers"),
    ],
)
def test_latent_build_rejects_a_bad_record(
    monkeypatch: pytest.MonkeyPatch, change: dict[str, Any], reason: str
) -> None:
    record = {**_GOOD_LATENT, **change}
    monkeypatch.setattr(latent_module, "load_records", lambda task: [record])
    with pytest.raises(ValueError, match=re.escape(reason)):
        latent_module.build_latent_cases()


# --- join -----------------------------------------------------------------------------------------

_BUDGET_LINE = re.compile(r"^- (\w+): (\d+) retries$")
_TIMEOUT_LINE = re.compile(r"^- (\w+): (\d+) ms$")


def _table(text: str, pattern: re.Pattern[str]) -> dict[str, int]:
    """Rows of one table: every line after the title must match ``pattern``."""
    title, *rows = text.splitlines()
    assert title.endswith(":"), title
    parsed: dict[str, int] = {}
    for row in rows:
        match = pattern.match(row)
        assert match is not None, row
        assert match.group(1) not in parsed, row
        parsed[match.group(1)] = int(match.group(2))
    return parsed


def _join_tables(case: Case) -> tuple[dict[str, int], dict[str, int], int]:
    budgets = timeouts = None
    for evidence in case.evidence:
        if "retries" in evidence.text:
            budgets = _table(evidence.text, _BUDGET_LINE)
        elif " ms" in evidence.text:
            timeouts = _table(evidence.text, _TIMEOUT_LINE)
    assert budgets is not None and timeouts is not None, case.case_id
    limit = re.search(r"at most (\d+)", case.question)
    assert limit is not None, case.question
    return budgets, timeouts, int(limit.group(1))


def test_join_oracle_is_the_filtered_maximum_recomputed_from_the_evidence() -> None:
    for case in _cases("join"):
        budgets, timeouts, limit = _join_tables(case)
        assert len(case.evidence) == 2
        assert set(budgets) == set(timeouts), case.case_id
        assert len(budgets) >= 3
        assert len(set(timeouts.values())) == len(timeouts), "timeouts must have a unique maximum"
        passing = [name for name in budgets if budgets[name] <= limit]
        assert 2 <= len(passing) < len(budgets), case.case_id
        filtered = max(passing, key=timeouts.__getitem__)
        unfiltered = max(timeouts, key=timeouts.__getitem__)
        assert case.oracle.answer == filtered, case.case_id
        assert unfiltered != filtered, case.case_id
        # the answer completes in the timeout table; the budget table supports it
        roles = {("retries" in e.text): e.role for e in case.evidence}
        assert roles == {True: "support", False: "answer"}, case.case_id
        assert set(case.guarded) == set(budgets)


def test_join_traps_are_the_unfiltered_maximum_and_every_other_entity() -> None:
    for case in _cases("join"):
        budgets, timeouts, _ = _join_tables(case)
        unfiltered = max(timeouts, key=timeouts.__getitem__)
        traps = list(case.oracle.traps)
        assert traps.count(("filter_ignored", unfiltered)) == 1, case.case_id
        assert [value for category, value in traps if category == "filter_ignored"] == [unfiltered]
        wrong = sorted(value for category, value in traps if category == "wrong_entity")
        assert wrong == sorted(set(budgets) - {case.oracle.answer, unfiltered}), case.case_id
        assert {category for category, _ in traps} == {"filter_ignored", "wrong_entity"}


def test_join_scoring_names_filter_ignored_and_wrong_entity() -> None:
    for case in _cases("join"):
        _, timeouts, _ = _join_tables(case)
        unfiltered = max(timeouts, key=timeouts.__getitem__)
        assert score(case.oracle, _reply(case.oracle.answer)).outcome == "correct"
        result = score(case.oracle, _reply(f"{unfiltered} has the highest timeout."))
        assert (result.outcome, result.category) == ("incorrect", "filter_ignored"), case.case_id
        for name in timeouts:
            if name in (case.oracle.answer, unfiltered):
                continue
            result = score(case.oracle, _reply(name))
            assert (result.outcome, result.category) == ("incorrect", "wrong_entity"), (case.case_id, name)


def test_join_cases_are_deterministic() -> None:
    assert _cases("join") == _cases("join")


def test_join_cases_are_the_same_in_another_process() -> None:
    here = [(case.case_id, [e.text for e in case.evidence], case.question) for case in _cases("join")]
    script = (
        "import json; from rotscope.tasks import get_task; "
        "print(json.dumps([(c.case_id, [e.text for e in c.evidence], c.question) "
        "for c in get_task('join').cases()]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    output = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env, timeout=60
    ).stdout
    there = [(case_id, texts, question) for case_id, texts, question in json.loads(output)]
    assert there == here


def test_join_entities_are_unique_across_cases() -> None:
    seen: set[str] = set()
    for case in _cases("join"):
        budgets, _, _ = _join_tables(case)
        assert not seen & set(budgets), case.case_id
        seen |= set(budgets)


# --- multihop -------------------------------------------------------------------------------------


def test_multihop_answer_is_only_in_the_last_hop() -> None:
    records = _records("multihop")
    for case in _cases("multihop"):
        record = records[case.case_id]
        assert 2 <= len(case.evidence) <= 3, case.case_id
        assert [e.text for e in case.evidence] == [str(hop) for hop in record["hops"]]
        *earlier, last = case.evidence
        assert last.role == "answer", case.case_id
        assert all(e.role == "support" for e in earlier), case.case_id
        assert [e.evidence_id for e in case.evidence] == [
            f"hop-{i}" for i in range(1, len(case.evidence) + 1)
        ]
        answer = case.oracle.answer
        assert answer == str(record["answer"])
        assert contains_answer(last.text, answer), case.case_id
        for text in [*(e.text for e in earlier), case.question]:
            assert not contains_answer(text, answer), (case.case_id, text)


def test_multihop_scoring() -> None:
    for case in _cases("multihop"):
        assert score(case.oracle, _reply(case.oracle.answer)).outcome == "correct"
        assert score(case.oracle, _reply("not in the context")).outcome == "abstained"
        result = score(case.oracle, _reply("Zebedee Nonesuch"))
        assert (result.outcome, result.category) == ("incorrect", "wrong_answer")
