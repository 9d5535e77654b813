"""``cases_per_task``: a generated family makes as many cases as asked, so a run can buy power.

Before, every built-in family had exactly 16 cases (the conservative effective length needs about
22 instances to take a value for a perfect model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope._util.text import mentions, shared_content_words
from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.plan.workitems import build_plan, select_cases
from rotscope.tasks import get_task
from rotscope.types import Case
from tests.support.cli_helpers import assert_bad_input, invoke

GENERATED = ("niah", "competitive", "multihop", "join", "latent")
UNIQUE_ANSWERS = ("niah", "competitive", "multihop", "join")
"""latent's answers are products of a base and a fraction: two cases may compute the same number."""


def _cases(task: str, count: int | None = None) -> list[Case]:
    fields = {} if count is None else {"cases_per_task": count}
    return list(get_task(task, build_config({"tasks": [task], **fields})).cases())


@pytest.mark.parametrize("task", GENERATED)
def test_a_generated_family_makes_40_distinct_cases(task: str) -> None:
    cases = _cases(task, 40)
    assert len(cases) == 40
    assert len({case.case_id for case in cases}) == 40
    if task in UNIQUE_ANSWERS:
        assert len({case.oracle.answer for case in cases}) == 40
    # no needle twice: every evidence text (the first, the last) is a case's own
    assert len({case.evidence[0].text for case in cases}) == 40
    assert len({case.evidence[-1].text for case in cases}) == 40
    for case in cases:
        traps = {value for _, value in case.oracle.traps}
        assert case.oracle.answer not in traps and not mentions(case.question, case.oracle.answer)
        if task != "latent":  # latent's answer is computed, never written
            assert mentions(case.evidence[-1].text if task != "competitive" else case.evidence[0].text,
                            case.oracle.answer), case.case_id  # fmt: skip


@pytest.mark.parametrize("task", GENERATED)
def test_the_first_16_are_todays_cases(task: str) -> None:
    default = _cases(task)
    assert len(default) == 16
    assert _cases(task, 40)[:16] == default
    assert _cases(task, 5) == default[:5]


def test_generated_entities_are_not_shared_between_cases() -> None:
    """No generated name or value stands in two cases (a needle of one cannot answer another)."""
    for task in ("niah", "competitive", "multihop"):
        cases = _cases(task, 60)[16:]
        for case in cases:
            for other in cases:
                if other is not case:
                    assert not mentions(" ".join(e.text for e in other.evidence), case.oracle.answer)


def test_generated_niah_questions_repeat_the_needles_words() -> None:
    for case in _cases("niah", 30)[16:]:
        assert shared_content_words(case.question, case.evidence[0].text)


def test_generation_is_deterministic() -> None:
    for task in GENERATED:
        assert _cases(task, 30) == _cases(task, 30)


def test_nolima_names_its_maximum() -> None:
    """Its hop goes through world knowledge (the Eiffel Tower is in France), not invented here."""
    assert len(_cases("nolima", 16)) == 16 and len(_cases("nolima", 3)) == 3
    with pytest.raises(BadInput, match=r"^cases_per_task: nolima has at most 16 cases .*got 17$"):
        _cases("nolima", 17)
    with pytest.raises(BadInput, match=r"^cases_per_task: join has at most 200 cases .*got 201$"):
        _cases("join", 201)


def test_60_cases_of_each_generated_family_plan_without_rejections() -> None:
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": list(GENERATED),
            "cases_per_task": 60,
            "lengths": [1024],
            "depths": [0.25, 0.75],
            "controls": False,
            "filler": {"kind": "readinglog"},
        }
    )
    assert len(select_cases(config)) == 300
    plan = build_plan(config, create_backend(config))
    assert plan.rejected == []
    for task in GENERATED:
        assert len({item.instance_id for item in plan.items if item.case.task == task}) == 60


def test_a_bad_count_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "experiment.yaml"
    path.write_text("model: fake/lexical\ncases_per_task: 0\n", encoding="utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "cases_per_task", "greater than 0")
    path.write_text("model: fake/lexical\ntasks: [niah, nolima]\ncases_per_task: 40\n", encoding="utf-8")
    assert_bad_input(invoke("run", path, "--dry-run"), "cases_per_task", "nolima", "at most 16", "40")
