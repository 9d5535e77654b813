"""Instruction adherence checks on hand-written replies, and the static-vs-session paired gap found
on a scripted model that loses accuracy in sessions only, and not on one that does not."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope.analysis.summary import load_summary
from rotscope.scoring.instruction import check_reply, score_instruction
from rotscope.tasks.instruction import build_instruction_cases
from rotscope.types import Completion
from tests.support.cli_helpers import invoke


@pytest.mark.parametrize(
    ("rule", "reply", "problem"),
    [
        ("ms", "The build step took 3200 ms.", None),
        ("ms", "It took 3,200 milliseconds", None),
        ("ms", "The build step took 3.2 seconds.", "other_unit"),
        ("ms", "3200 ms (3.2 s)", "other_unit"),
        ("ms", "It took a while.", "no_duration"),
        ("avoid:requests", "I would use httpx for that.", None),
        ("avoid:requests", "Use the Requests library.", "named_banned"),
        ("avoid:requests", "   ", "empty"),
        ("ticket:T-4821", "Check the cache next. T-4821", None),
        ("ticket:T-4821", "Check the cache next (T-4821).", None),
        ("ticket:T-4821", "T-4821: check the cache next.", "ticket_not_last"),
        ("ticket:T-4821", "Check the cache next.", "ticket_missing"),
        ("json:vorn_status", '{"vorn_status": "slow", "why": "disk"}', None),
        ("json:vorn_status", '```json\n{"vorn_status": "ok"}\n```', None),
        ("json:vorn_status", '{"status": "ok"}', "field_missing"),
        ("json:vorn_status", "The vorn_status is ok.", "not_json"),
        ("json:vorn_status", '["vorn_status"]', "not_json"),
    ],
)
def test_instruction_checks_on_hand_written_replies(rule: str, reply: str, problem: str | None) -> None:
    assert check_reply(rule, reply) == problem


def test_instruction_cases_and_their_controls_keep_the_check() -> None:
    cases = build_instruction_cases(8)
    assert [case.oracle.answer.split(":")[0] for case in cases[:4]] == ["ms", "avoid", "ticket", "json"]
    assert len({case.evidence[0].text for case in cases}) == 8
    assert all(case.evidence[0].turn == "user" for case in cases)
    ticket = cases[2]
    control = ticket.absent_control()
    assert control.evidence == () and control.oracle == ticket.oracle
    parameter = ticket.oracle.answer.split(":")[1]
    assert score_instruction(control, Completion(text=f"Looks fine. {parameter}"), None).outcome == "correct"
    failed = score_instruction(control, Completion(text="Looks fine."), None)
    assert (failed.outcome, failed.category) == ("incorrect", "ticket_missing")
    assert score_instruction(ticket, Completion(text="", error="timeout"), None).outcome == "error"


def _run(tmp_path: Path, model: str) -> dict[str, Any]:
    tmp_path.mkdir()
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        f"model: {model}\ntasks: [niah]\nlengths: [512, 1024]\ndepths: [0.5, 0.9]\nlimit: 12\n"
        "controls: false\n"
        "filler: {kind: session, variants: 2, static: {kind: readinglog, variants: 12}}\n"
    )
    out = tmp_path / "run"
    result = invoke("run", experiment, "--out", out)
    assert result.exit_code == 0, result.output
    summary = load_summary(out).model_dump()
    shown = invoke("show", out)
    assert "static vs session filler" in shown.stdout
    return summary


def test_a_session_effect_is_found_and_no_effect_is_not(tmp_path: Path) -> None:
    dropping = _run(tmp_path / "drop", "fake/session-drop-60")
    steady = _run(tmp_path / "steady", "fake/lexical")
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text("utf-8")
    )
    jsonschema.validate(dropping, schema, cls=jsonschema.Draft202012Validator)
    (pooled, *by_length) = dropping["filler_gap"]
    assert pooled["length"] is None and [gap["length"] for gap in by_length] == [512, 1024]
    assert pooled["pairs"] == 12 and pooled["unmatched"] == 0
    assert pooled["static_accuracy"] == 1.0 and pooled["session_accuracy"] < 0.7
    assert pooled["ci_high"] < 0  # the session costs accuracy: the interval excludes 0
    (flat, *_) = steady["filler_gap"]
    assert flat["pairs"] == 12
    assert flat["ci_low"] <= 0 <= flat["ci_high"]  # no session effect: the interval holds 0
    cells = [cell for cell in dropping["cells"] if cell.get("filler") == "session"]
    assert cells and all(isinstance(cell["depth"], float) for cell in cells)
