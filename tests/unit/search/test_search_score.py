"""The search's per-case means on the chosen score (issue 49): the gold answer's probability on a
``score: likelihood`` run, correctness otherwise; controls and other steps' cases left out."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import pytest

from rotscope.config.experiment import build_config
from rotscope.rows import Row
from rotscope.search.decisions import Step
from rotscope.search.run import _means, decision_score


def _row(case: str, outcome: str, p: float, control: int = 0) -> Row:
    return cast(Row, {"case_id": case, "control": control, "status": "ok", "outcome": outcome,
                      "answer_logprob": math.log(p)})  # fmt: skip


ROWS = [
    _row("a", "correct", 0.8),
    _row("a", "incorrect", 0.4),
    _row("b", "incorrect", 0.6),
    _row("b", "correct", 0.01, control=1),
    _row("c", "correct", 0.9),
]


def test_the_means_read_the_chosen_score() -> None:
    step = Step(index=0, length=1024, start=0, count=2)
    assert _means(ROWS, ["a", "b"], step, Path("unused")) == [0.5, 0.0]
    found = _means(ROWS, ["a", "b"], step, Path("unused"), "likelihood")
    assert found == pytest.approx([0.6, 0.6])


@pytest.mark.parametrize(
    ("asked", "expected"),
    [(None, "accuracy"), ("both", "accuracy"), ("accuracy", "accuracy"), ("likelihood", "likelihood")],
)
def test_the_search_decides_on_the_likelihood_only_where_the_run_keeps_only_it(
    asked: str | None, expected: str
) -> None:
    data = {"model": "fake/lexical", "tasks": ["niah"], "lengths": [256], "score": asked}
    config = build_config(data, "test")
    assert decision_score(config) == expected
