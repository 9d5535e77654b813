"""The case-file contract: JSON Lines validated against the shipped schema, bad lines named by
file:line and field (exit 2), and the mapping of a line onto Case, Evidence and Oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.config.experiment import load_config
from rotscope.errors import BadInput
from rotscope.tasks import get_task
from rotscope.tasks.cases import (
    CITE_INSTRUCTION,
    QUOTE_INSTRUCTION,
    case_schema,
    load_case_file,
    shipped_schema,
)

EXAMPLE = Path(__file__).parents[3] / "examples" / "gate" / "cases.jsonl"
VALID: dict[str, Any] = {
    "case_id": "refund-window",
    "question": "How many days does a customer have to request a refund?",
    "documents": [
        {"id": "policy-7", "text": "Refunds are accepted within 23 days.", "claims": ["window-23"]}
    ],
    "distractors": [{"id": "faq-2", "text": "Exchanges are handled by the returns desk."}],
    "claims": {"window-23": ["23 days", "twenty-three days"], "window-30": ["30 days"]},
    "required_claims": ["window-23"],
    "forbidden_claims": ["window-30"],
    "abstain": False,
    "cite": False,
    "slices": {"risk": "high", "hops": "single"},
}


def _write(path: Path, *records: dict[str, Any] | str) -> Path:
    lines = [record if isinstance(record, str) else json.dumps(record) for record in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _with(**changes: Any) -> dict[str, Any]:
    record = json.loads(json.dumps(VALID))
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        else:
            record[key] = value
    return record


def test_shipped_schema_is_the_one_the_loader_enforces() -> None:
    assert shipped_schema() == case_schema()


def test_example_case_file_follows_the_schema_line_by_line() -> None:
    validator = jsonschema.Draft202012Validator(shipped_schema())
    lines = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert 12 <= len(lines) <= 40  # 30 since the gate example was sized to decide (issue 32)
    for line in lines:
        validator.validate(line)
    cases = load_case_file(EXAMPLE)
    assert [case.case_id for case in cases] == [line["case_id"] for line in lines]
    kinds = {line["slices"]["kind"] for line in lines}
    assert {
        "single",
        "ordering",
        "negation",
        "exception",
        "conflict",
        "distractor",
        "abstain",
        "cite",
    } <= kinds
    assert 2 <= sum(line.get("abstain", False) for line in lines) <= 3
    assert sum(line.get("cite", False) for line in lines) >= 2


def test_schema_rejects_an_unknown_field() -> None:
    validator = jsonschema.Draft202012Validator(shipped_schema())
    assert not validator.is_valid(_with(answer="23 days"))
    assert validator.is_valid(VALID)


def test_a_line_maps_onto_case_evidence_and_oracle(tmp_path: Path) -> None:
    (case,) = load_case_file(_write(tmp_path / "cases.jsonl", VALID))
    assert case.task == "cases" and case.grouped
    assert [(e.evidence_id, e.role) for e in case.evidence] == [("policy-7", "answer"), ("faq-2", "decoy")]
    assert case.evidence[0].text == "Refunds are accepted within 23 days."
    assert case.slices == (("hops", "single"), ("risk", "high"))
    claims = case.oracle.claims
    assert claims is not None and claims.cite is None
    assert claims.required == (("window-23", ("23 days", "twenty-three days")),)
    assert claims.forbidden == (("window-30", ("30 days",)),)
    assert case.oracle.answer == "23 days" and not case.oracle.abstain
    assert set(case.guarded) == {"23 days", "30 days"}


def test_cite_shows_ids_and_asks_for_them(tmp_path: Path) -> None:
    (case,) = load_case_file(_write(tmp_path / "cases.jsonl", _with(cite=True)))
    assert case.evidence[0].text == "[policy-7] Refunds are accepted within 23 days."
    assert case.evidence[1].text == "[faq-2] Exchanges are handled by the returns desk."
    assert case.question.endswith(CITE_INSTRUCTION)
    assert case.oracle.claims is not None
    assert case.oracle.claims.cite == (("window-23", ("policy-7",)),)


def test_quote_asks_for_quotes_and_checks_them_against_the_declared_span(tmp_path: Path) -> None:
    document = {
        "id": "policy-7",
        "text": "Refunds are accepted within 23 days. Staff may not waive this.",
        "claims": ["window-23"],
        "span": "Refunds are accepted within 23 days.",
    }
    (case,) = load_case_file(
        _write(tmp_path / "cases.jsonl", _with(cite=True, quote=True, documents=[document]))
    )
    assert case.question.endswith(QUOTE_INSTRUCTION)
    assert case.oracle.claims is not None
    assert case.oracle.claims.quotes == (("policy-7", "Refunds are accepted within 23 days."),)
    (plain,) = load_case_file(_write(tmp_path / "plain.jsonl", _with(cite=True)))
    assert plain.oracle.claims is not None and plain.oracle.claims.quotes is None
    # without a span, the whole text is the span
    (whole,) = load_case_file(_write(tmp_path / "whole.jsonl", _with(cite=True, quote=True)))
    assert whole.oracle.claims is not None
    assert whole.oracle.claims.quotes == (("policy-7", "Refunds are accepted within 23 days."),)


def test_abstain_case_has_an_abstaining_oracle(tmp_path: Path) -> None:
    record = _with(documents=[], required_claims=[], abstain=True)
    (case,) = load_case_file(_write(tmp_path / "cases.jsonl", record))
    assert case.oracle.abstain and case.oracle.answer == ""
    assert [e.role for e in case.evidence] == ["decoy"]


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        (_with(answer="x"), ["unknown field 'answer'"]),
        (_with(question=None), ["field 'question' is required"]),
        (_with(question="   "), ["field 'question'"]),
        (_with(documents=[{"id": "policy 7", "text": "x", "claims": []}]), ["field 'documents[0].id'"]),
        (_with(documents=[{"id": "p", "txt": "x"}]), ["documents[0].text", "required"]),
        (_with(abstain="no"), ["field 'abstain'"]),
        (_with(claims={"window-23": []}), ["claims.window-23"]),
        (_with(required_claims=["window-99"]), ["required_claims", "window-99", "not defined"]),
        (_with(forbidden_claims=["window-23"]), ["forbidden_claims", "also required"]),
        (_with(abstain=True), ["required_claims", "abstain"]),
        (_with(required_claims=[], abstain=True, cite=True), ["field cite"]),
        (_with(required_claims=[]), ["required_claims", "at least one"]),
        (_with(quote=True), ["field quote", "needs cite: true"]),
        (
            _with(cite=True, quote=True, documents=[{**VALID["documents"][0], "span": "within 24 days"}]),
            ["documents[0].span", "not an exact substring"],
        ),
        (
            _with(documents=[{"id": "policy-7", "text": "Refunds.", "claims": []}]),
            ["required_claims", "no document supports"],
        ),
        (_with(distractors=[{"id": "policy-7", "text": "Other."}]), ["ids", "not unique"]),
        (_with(distractors=[{"id": "d", "text": "within 23 days"}]), ["occurs inside another piece"]),
        (
            _with(pin=[{"length": 300, "position": 0.5, "depths": {"policy-7": 0.4}}]),
            ["pin[0].depths", "every document and distractor"],
        ),
        (
            _with(
                pin=[
                    {"length": 300, "position": 0.5, "depths": {"policy-7": 0.4, "faq-2": 0.1}},
                    {"length": 600, "position": 0.5},
                ]
            ),
            ["pin[1].depths", "every pin or at none"],
        ),
        (
            _with(pin=[{"length": 300, "position": 0.5, "depths": {"policy-7": 1.5, "faq-2": 0.1}}]),
            ["pin[0].depths.policy-7"],
        ),
        (_with(haystack={"seed": 1, "variant": 0, "variants": 1}), ["haystack.tokens", "required"]),
        ('{"case_id": "x",', ["not valid JSON"]),
        ("[1, 2]", ["must be a JSON object"]),
    ],
)
def test_bad_lines_name_file_line_and_field(
    tmp_path: Path, line: dict[str, Any] | str, fragments: list[str]
) -> None:
    path = _write(tmp_path / "cases.jsonl", _with(case_id="first"), "", line)
    with pytest.raises(BadInput) as raised:
        load_case_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:3: "), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_duplicate_case_ids_name_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "cases.jsonl", VALID, VALID)
    with pytest.raises(BadInput, match=r"cases\.jsonl:2: field 'case_id'.*line 1"):
        load_case_file(path)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="holds no case"):
        load_case_file(_write(tmp_path / "empty.jsonl", ""))
    with pytest.raises(BadInput, match="not found"):
        load_case_file(tmp_path / "absent.jsonl")


def _experiment(tmp_path: Path, **fields: Any) -> Path:
    data = {"model": "fake/lexical", "tasks": ["cases"], "lengths": [200], **fields}
    path = tmp_path / "conf" / "exp.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_case_path_is_relative_to_the_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    _write(tmp_path / "conf" / "mine.jsonl", VALID)
    config = load_config(_experiment(tmp_path, cases="mine.jsonl"))
    assert config.cases == str((tmp_path / "conf" / "mine.jsonl").resolve())
    (case,) = get_task("cases", config).cases()
    assert case.case_id == "refund-window"


def test_cases_family_without_a_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="needs a case file"):
        load_config(_experiment(tmp_path))


def test_cli_exits_2_with_one_line_naming_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    _write(tmp_path / "conf" / "cases.jsonl", VALID, _with(case_id="second", risk="high"))
    result = CliRunner().invoke(app, ["run", str(_experiment(tmp_path, cases="cases.jsonl")), "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("rotscope: ") and "cases.jsonl:2: unknown field 'risk'" in lines[0]


def test_pin_depths_place_each_piece_and_a_haystack_is_read_while_old_lines_stay_blocks(
    tmp_path: Path,
) -> None:
    pinned = _with(
        case_id="saved",
        pin=[
            {"length": 300, "position": 0.5, "depths": {"policy-7": 0.75, "faq-2": 0.125}},
            {"length": 600, "position": "midpoint", "depths": {"policy-7": 0.5, "faq-2": 0.0}},
        ],
        haystack={
            "seed": 7,
            "variant": 1,
            "variants": 2,
            "tokens": 600,
            "avoid": ["23 days"],
            "digest": "ab",
        },
    )
    saved, old = load_case_file(_write(tmp_path / "cases.jsonl", pinned, VALID))
    assert not saved.grouped and old.grouped  # pieces at their own depths; an old line one block
    assert saved.pin_depths == (
        (300, 0.5, (("policy-7", 0.75), ("faq-2", 0.125))),
        (600, "midpoint", (("policy-7", 0.5), ("faq-2", 0.0))),
    )
    assert saved.haystack is not None and saved.haystack.variant == 1 and saved.haystack.avoid == ("23 days",)
    assert saved.absent_control().haystack == saved.haystack
    assert old.pin_depths == () and old.haystack is None
    jsonschema.Draft202012Validator(shipped_schema()).validate(pinned)
