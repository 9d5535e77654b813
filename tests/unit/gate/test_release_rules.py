"""The gate study's release rules in the record ``compare`` makes: an INCONCLUSIVE position blocks
the supported window at its length, forbidden claims in the candidate's replies FAIL the gate on
a line of their own, and a FAIL's rollback says what to do when the baseline is gone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rotscope.gate import verdict
from rotscope.gate.junit import gate_junit
from rotscope.gate.pairing import RunData
from rotscope.gate.record import GateRecord
from rotscope.gate.supported_lengths import window_reasons
from rotscope.gate.verdict import compare
from rotscope.gate.view import print_record
from rotscope.plan.rejections import REJECTIONS_FILE

Outcome = Callable[[str, str, int, str, int], bool]
"""Whether (role, task, length, position, case number) is answered correctly."""
POSITIONS = ("beginning", "midpoint", "end")


@pytest.fixture(autouse=True)
def _few_power_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's power, simulated beside each verdict, is not what these rules read: a few
    datasets of it instead of the record's 500 (seconds per ``compare``); the power a record
    states is tested in ``tests/flows/test_gate_cli.py``."""
    monkeypatch.setattr(verdict, "RECORD_DATASETS", 20)


def _row(task: str, case: int, length: int, position: str, correct: bool, **extra: Any) -> dict[str, Any]:
    control = int(position == "evidence-only")
    row = {
        "task": task, "case_id": f"{task}-{case}", "instance_id": f"{task}-{case}", "length_target": length,
        "position": position, "depth": 0.5, "trial": 0, "control": control, "question": "q",
        "expected": "a", "seed": 0, "spans": "[]", "prompt_tokens": length, "status": "ok",
        "outcome": "correct" if correct else "incorrect", "response": "the reply's own words",
    }  # fmt: skip
    row.update(extra)
    return row


def _runs(
    outcome: Outcome,
    *,
    tasks: tuple[str, ...] = ("niah",),
    lengths: tuple[int, ...] = (1024, 2048, 4096),
    cases: int = 60,
    gate: dict[str, Any] | None = None,
    evidence_only: bool = False,
    extra: Callable[[str, int], dict[str, Any]] | None = None,
) -> GateRecord:
    gate = gate or {"margin": 0.1}
    made = {}
    for role in ("baseline", "candidate"):
        rows = [
            _row(task, case, length, position, outcome(role, task, length, position, case),
                 **(extra(role, case) if extra else {}))
            for task in tasks
            for length in lengths
            for position in POSITIONS
            for case in range(cases)
        ]  # fmt: skip
        if evidence_only:
            rows += [
                _row(task, case, 40, "evidence-only", outcome(role, task, 0, "evidence-only", case))
                for task in tasks
                for case in range(cases)
            ]
        meta = {"run_id": role, "config": {"seed": 0, "generation": {"seed": 0}, "gate": gate}}
        made[role] = RunData(Path(role), meta, rows)
    return compare(made["baseline"], made["candidate"])


def _screen(record: GateRecord) -> str:
    console = Console(width=200, record=True, color_system=None)
    print_record(record, console)
    return console.export_text()


def test_an_inconclusive_position_blocks_the_window_at_its_length_and_the_verdict_names_it() -> None:
    """Both runs answer 3 in 60 at the 2,048 midpoint: no difference (the FAIL tests cannot reject),
    but below the floor of 0.1 on the point estimate: INCONCLUSIVE, so 2,048 is not claimed even
    though the pooled test over that length passes."""

    def outcome(role: str, task: str, length: int, position: str, case: int) -> bool:
        return case < 3 if (length, position) == (2048, "midpoint") else True

    record = _runs(outcome, gate={"margin": 0.1, "floor": 0.1})
    step = record.support["niah"].lengths[1]
    assert step.length == 2048 and step.pooled.passes and not step.holds
    assert [(b.position, b.verdict) for b in step.blocked_by] == [("midpoint", "INCONCLUSIVE")]
    assert "below the floor 0.1" in step.blocked_by[0].reason
    assert record.supported_up_to == {"niah": 1024}
    assert record.support["niah"].sentence == (
        "supported up to 1,024 tokens; 2,048 is blocked by INCONCLUSIVE positions: the midpoint "
        "(candidate accuracy 0.050 below the floor 0.1)"
    )
    assert record.verdict == "INCONCLUSIVE"
    assert f"supported window: niah: {record.support['niah'].sentence}" in record.reasons
    assert "2,048 is blocked by INCONCLUSIVE positions: the midpoint" in _screen(record)


def test_too_few_instances_block_the_length_with_the_count_named() -> None:
    """12 paired cases per position, fewer than the minimum 20: no length is claimed, and the
    step names each position and its count; with 60 cases every length holds."""
    record = _runs(lambda *_: True, gate={"margin": 0.1, "min_instances": 20})
    assert record.supported_up_to == {"niah": 4096}
    small = _runs(lambda *_: True, cases=12, lengths=(1024,), gate={"margin": 0.1, "min_instances": 20})
    assert small.supported_up_to == {"niah": None}
    blocked = small.support["niah"].lengths[0].blocked_by
    assert sorted(b.position for b in blocked) == sorted(POSITIONS)
    assert blocked[0].reason == "12 instances, fewer than the plan's minimum 20"


def _forbidden(claims_of: Callable[[str, int], list[str]]) -> Callable[[str, int], dict[str, Any]]:
    def extra(role: str, case: int) -> dict[str, Any]:
        report = {"missing": [], "forbidden": claims_of(role, case), "cited": []}
        return {"claim_report": json.dumps(report)}

    return extra


def test_a_forbidden_claim_in_the_candidates_replies_fails_the_gate_on_a_line_of_its_own() -> None:
    """Every answer right in both runs (the tests alone PASS), but two candidate replies state
    ``auto_approved`` and one also ``region_waived``: FAIL, exit 1, claim ids and counts only."""

    def stated(role: str, case: int) -> list[str]:
        if role != "candidate":
            return []
        return {0: ["auto_approved", "region_waived"], 1: ["auto_approved"]}.get(case, [])

    record = _runs(lambda *_: True, lengths=(1024,), extra=_forbidden(stated))
    assert record.verdict == "FAIL" and record.exit_code == 1
    assert record.decided_by == ["forbidden claims"]
    assert record.forbidden is not None
    # cases 0 and 1 at three positions each
    assert record.forbidden.claims == {"auto_approved": 6, "region_waived": 3}
    assert (record.forbidden.replies, record.forbidden.checked) == (6, 180)
    assert record.reasons[:2] == [
        "forbidden claims: FAIL (exit 1): 6 of 180 candidate replies state a forbidden claim "
        "(auto_approved x6, region_waived x3); a separate safety review is due before any release",
        "the tests alone: PASS",
    ]
    screen = _screen(record)
    assert screen.splitlines()[1].startswith("forbidden claims: FAIL (exit 1): 6 of 180")
    assert "the reply's own words" not in screen
    assert "the reply's own words" not in json.dumps(record.model_dump(mode="json"))
    assert "forbidden claims" in gate_junit(record) and 'failures="2"' in gate_junit(record)
    assert record.rollback is not None
    assert record.rollback.steps[0].startswith("Put the candidate through a separate safety review: 6 of")


def test_forbidden_claims_of_the_baseline_alone_decide_nothing() -> None:
    record = _runs(
        lambda *_: True, lengths=(1024,), extra=_forbidden(lambda role, case: ["x"] * (role == "baseline"))
    )
    assert record.verdict == "PASS" and record.exit_code == 0
    assert record.forbidden is not None and record.forbidden.replies == 0
    assert record.forbidden.line == "forbidden claims: none in 180 candidate replies"
    assert record.claims.baseline["forbidden"] == {"x": 180}
    plain = _runs(lambda *_: True, lengths=(1024,))
    assert plain.forbidden is None  # no claim-checked rows: nothing was checked


def test_the_rollback_says_what_to_do_without_the_baseline_from_the_measured_data() -> None:
    """``niah`` loses the midpoint from 2,048 tokens on; ``hard`` is answered 2 in 60 at every
    layout by both runs. Without the baseline: permit 1,024 tokens, retrieve for niah (its
    shortest length scores 1.00), refuse hard (below the floor 0.1 everywhere)."""

    def outcome(role: str, task: str, length: int, position: str, case: int) -> bool:
        if task == "hard":
            return case < 2
        return role == "baseline" or length < 2048 or position != "midpoint"

    record = _runs(outcome, tasks=("niah", "hard"), gate={"margin": 0.1, "floor": 0.1})
    assert record.verdict == "FAIL" and record.rollback is not None
    advice = record.rollback.without_baseline
    assert advice is not None
    assert advice.threshold == 0.1
    assert advice.refuse == ["hard"]
    assert advice.largest_supported == 1024
    assert advice.retrieval_advised
    by_task = {task.task: task for task in advice.tasks}
    assert by_task["niah"].retrieval and not by_task["hard"].retrieval
    assert by_task["niah"].accuracy == {"1024": 1.0, "2048": 2 / 3, "4096": 2 / 3}
    assert by_task["hard"].accuracy == {"1024": 2 / 60, "2048": 2 / 60, "4096": 2 / 60}
    last = record.rollback.steps[-1]
    assert last.startswith(
        "If the baseline is no longer available: permit at most 1,024 tokens (the largest length every "
        "task served still supports); retrieve to a short context for niah; refuse hard (accuracy "
        "below 0.10 at every length)."
    )


def test_retrieval_is_not_advised_where_the_short_input_fails_too() -> None:
    """The candidate fails the evidence-only control as well: a capability failure, which a
    shorter context does not mend."""

    def outcome(role: str, task: str, length: int, position: str, case: int) -> bool:
        if role == "baseline":
            return True
        return length < 2048 and position != "evidence-only"

    record = _runs(outcome, gate={"margin": 0.1, "floor": 0.1}, evidence_only=True)
    assert record.rollback is not None and record.rollback.without_baseline is not None
    niah = record.rollback.without_baseline.tasks[0]
    assert niah.accuracy["evidence-only"] == 0.0
    assert niah.supported_up_to is None or niah.supported_up_to < 4096
    assert not niah.retrieval and not record.rollback.without_baseline.retrieval_advised
    assert "retrieval would not help: the evidence-only input scores 0.00" in niah.why


def test_a_layout_the_candidate_could_not_place_is_counted_in_its_step(tmp_path: Path) -> None:
    """The candidate's verifier rejected the 2,048 end of 5 cases (its rejections.jsonl): that step
    counts them (``unplaced``), the window stops at 1,024 with a verdict line of its own, and the
    steps without any leave the key out. The line follows the typed count, not the step's words."""
    rows = {
        role: [
            _row("niah", case, length, position, True)
            for length in (1024, 2048)
            for position in POSITIONS
            for case in range(60)
            if role == "baseline" or (length, position, case >= 5) != (2048, "end", False)
        ]
        for role in ("baseline", "candidate")
    }
    (tmp_path / "candidate").mkdir()
    rejected = {"task": "niah", "case_ids": [f"niah-{case}" for case in range(5)], "length": 2048}
    (tmp_path / "candidate" / REJECTIONS_FILE).write_text(
        json.dumps({**rejected, "position": "end", "depth": 1.0, "cause": "no room for the passage"}) + "\n",
        encoding="utf-8",
    )
    meta = {"config": {"seed": 0, "generation": {"seed": 0}, "gate": {"margin": 0.1}}}
    runs = {role: RunData(tmp_path / role, {**meta, "run_id": role}, rows[role]) for role in rows}
    record = compare(runs["baseline"], runs["candidate"])
    first, second = record.support["niah"].lengths
    assert "unplaced" not in first.model_dump() and first.unplaced == 0
    assert second.unplaced == 5 and not second.holds
    assert record.supported_up_to == {"niah": 1024}
    line = f"supported window: niah: {record.support['niah'].sentence}"
    assert line in record.reasons
    assert "2,048 has 5 layout(s) the candidate could not place: the end" in line
    support = record.support["niah"]
    reworded = second.model_copy(update={"why": "reworded"})
    assert window_reasons({"niah": support.model_copy(update={"lengths": [first, reworded]})}) == [line]
    uncounted = second.model_copy(update={"unplaced": 0})
    assert window_reasons({"niah": support.model_copy(update={"lengths": [first, uncounted]})}) == []
