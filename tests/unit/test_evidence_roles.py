"""Evidence roles are registered names (``rotscope.evidence_roles``): the built-ins' placements, an
outside family's own role placed as a built-in one is, a conflicting registration and an unknown
role refused at placement in one line, and readers that only look (a case exported as a case-file
line) taking an unknown role without failing."""

from __future__ import annotations

import pytest

from rotscope import evidence_roles
from rotscope.config.experiment import PlacementConfig
from rotscope.errors import BadInput
from rotscope.evidence_roles import check_role, placement_of, register_role, roles
from rotscope.prompt.placement import target_depths
from rotscope.tasks.case_lines import case_line
from rotscope.types import Case, Evidence, Layout, Oracle


@pytest.fixture(autouse=True)
def _own_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test registers into a copy of the table, so no role outlives it."""
    monkeypatch.setattr(evidence_roles, "_ROLES", dict(evidence_roles._ROLES))


def _case(*roles: str) -> Case:
    evidence = tuple(Evidence(f"piece-{i}", f"Piece {i} is a {role}.", role) for i, role in enumerate(roles))
    return Case("hand-01", "hand", evidence, "What?", Oracle("x"))


def test_the_built_in_roles_and_their_placements() -> None:
    assert roles() == {
        "answer": "grid",
        "support": "rule",
        "decoy": "seeded",
        "superseded": "before",
        "spread": "spread",
    }


def test_an_outside_role_is_placed_as_the_built_in_role_of_its_placement() -> None:
    register_role("distractor", placement="seeded", module="acme_rotscope.family")
    layout, rule = Layout(4000, 0.5), PlacementConfig()
    own = target_depths(_case("answer", "distractor", "distractor"), layout, rule, 7)
    built_in = target_depths(_case("answer", "decoy", "decoy"), layout, rule, 7)
    assert own == built_in
    assert own["piece-0"] == 0.5
    assert {own["piece-1"], own["piece-2"]} != {0.5}


def test_an_outside_role_placed_before_lands_before_the_answer() -> None:
    register_role("retracted", placement="before")
    targets = target_depths(_case("retracted", "answer"), Layout(4000, 0.8), PlacementConfig(), 3)
    assert targets["piece-1"] == 0.8
    assert 0.0 <= targets["piece-0"] < 0.8


def test_registering_again_is_a_no_op_and_a_conflict_names_both() -> None:
    assert register_role("distractor", placement="seeded", module="acme_rotscope.family") == "distractor"
    register_role("distractor", placement="seeded", module="acme_rotscope.family")
    assert placement_of("distractor") == "seeded"
    with pytest.raises(BadInput) as raised:
        register_role("distractor", placement="grid", module="other_rotscope.family")
    message = str(raised.value)
    assert "other_rotscope.family" in message and "acme_rotscope.family" in message
    assert "\n" not in message
    with pytest.raises(BadInput, match=r"'answer'.*rotscope\.evidence_roles"):
        register_role("answer", placement="seeded", module="acme_rotscope.family")


def test_an_unknown_role_is_bad_input_at_placement_naming_the_known() -> None:
    assert placement_of("hint") is None
    with pytest.raises(BadInput) as raised:
        target_depths(_case("answer", "hint"), Layout(4000, 0.5), PlacementConfig(), 0)
    message = str(raised.value)
    assert "case hand-01: evidence piece-1: unknown evidence role 'hint'" in message
    assert "answer, decoy, spread, superseded, support" in message
    with pytest.raises(BadInput, match="unknown evidence role 'hint'"):
        check_role("hint")


def test_an_exported_case_line_takes_an_unknown_role_as_a_document() -> None:
    line = case_line(_case("answer", "hint", "decoy"))
    assert [(doc["id"], doc["claims"]) for doc in line["documents"]] == [
        ("piece-0", ["answer"]),
        ("piece-1", []),
    ]
    assert [piece["id"] for piece in line["distractors"]] == ["piece-2"]


def test_a_role_placed_as_a_decoy_is_exported_as_a_distractor() -> None:
    register_role("distractor", placement="seeded")
    line = case_line(_case("answer", "distractor"))
    assert [piece["id"] for piece in line["distractors"]] == ["piece-1"]
    assert [doc["id"] for doc in line["documents"]] == ["piece-0"]
