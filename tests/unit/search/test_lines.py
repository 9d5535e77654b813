"""The search's lines compare with the grid a user would have run beside the one sized in
hindsight; a record from before the cap's default (one grid, sized in hindsight) still shows."""

from __future__ import annotations

from typing import Any

from rotscope.search.lines import search_lines
from rotscope.search.record import SearchRecord

DECISION = {"index": 0, "length": 1000, "instances": 32, "score": 0.9, "base": 0.95, "lower": 0.05,
            "upper": 0.2, "state": "pass"}  # fmt: skip


def record(**fields: Any) -> SearchRecord:
    """A search record as ``read_search_record`` gives it (the budget: none set)."""
    return SearchRecord.model_validate({
        "verdict": "decided", "reason": "", "bracket": {"passes": 1000, "fails": 2000},
        "pass_decision": DECISION, "fail_decision": {**DECISION, "length": 2000, "state": "fail"},
        "definition": {"relative": True, "value": 0.85}, "confidence": 0.95, "range": [1000, 8000],
        "decisions": [DECISION], "non_monotone": [], "calls": 1_380, "prompt_tokens": 10_000,
        "budget": {}, "method": "m", **fields,
    })  # fmt: skip


def test_the_full_grid_is_stated_beside_the_hindsight_one() -> None:
    lines = search_lines(
        record(
            fixed_grid={"lengths": 4, "instances_per_length": 512, "calls": 7_680},
            fixed_grid_hindsight={"lengths": 4, "instances_per_length": 32, "calls": 480},
            shared_haystacks=None,
        )
    )
    grid = next(line for line in lines if line.startswith("calls 1,380"))
    assert "every one of the 512 cases at each of its 4 lengths and the base, would take 7,680 calls" in grid
    assert "(the search took 18% of them)" in grid and "with the 32 instances" in grid and "480" in grid
    assert not any("shared" in line for line in lines)
    assert "  clustered on the instances (one haystack each)" in lines


def test_shared_haystacks_are_stated_and_an_old_record_shows_its_one_grid() -> None:
    lines = search_lines(
        record(fixed_grid={"lengths": 4, "instances_per_length": 16, "calls": 320}, shared_haystacks=3)
    )
    assert any("instances shared 3 haystack variants" in line for line in lines)
    assert any("where the cluster rule would take the 3 variants" in line for line in lines)
    assert "  clustered on the instances (one haystack each)" not in lines
    old = search_lines(record(fixed_grid={"lengths": 4, "instances_per_length": 16, "calls": 320}))
    assert any("(4 lengths × 16 instances) would take 320 calls" in line for line in old)


def test_an_undecided_search_names_the_lengths_left_open_at_the_cap() -> None:
    open_decision = {**DECISION, "index": 1, "length": 1414, "instances": 512, "score": 0.81, "state": "open"}
    lines = search_lines(
        record(
            verdict="undecided", reason="lengths inside the bracket stayed undecided at 512 instances",
            decisions=[DECISION, {**open_decision, "instances": 256}, open_decision], cap=512,
            fixed_grid={"lengths": 4, "instances_per_length": 512, "calls": 7_680},
        )
    )  # fmt: skip
    (left,) = [line for line in lines if "left open" in line]
    assert "left open at the cap of 512 instances: 1,414 (512 instances, score 0.81)" in left
    assert "1,000" not in left  # a length that passed is not open
    decided = search_lines(record(fixed_grid={"lengths": 4, "instances_per_length": 16, "calls": 320}))
    assert not any("left open" in line for line in decided)
