"""``rotscope cases check FILE``: a question that copies its evidence's words is named (exit 1);
the nolima family's own cases, written as a case file, pass (exit 0); a bad file is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from rotscope.tasks.needles import load_needle_cases
from tests.support.cli_helpers import assert_bad_input, invoke


def _line(case_id: str, question: str, evidence: str, answer: str) -> str:
    record = {
        "case_id": case_id,
        "question": question,
        "documents": [{"id": "d1", "text": evidence, "claims": ["a"]}],
        "claims": {"a": [answer]},
        "required_claims": ["a"],
    }
    return json.dumps(record) + "\n"


def test_a_copied_question_is_flagged_and_nolima_passes(tmp_path: Path) -> None:
    copied = tmp_path / "copied.jsonl"
    copied.write_text(
        _line("copied", "Which city did Yuki visit in spring?", "In spring Yuki visited Porto.", "Porto")
        + _line(
            "hop",
            "Which character has been to Portugal?",
            "Actually, Yuki lives next to the Torre dos Clerigos.",
            "Yuki",
        ),
        encoding="utf-8",
    )
    result = invoke("cases", "check", copied)
    assert result.exit_code == 1, result.output
    assert "2 cases" in result.stdout and "1 share content words" in result.stdout
    assert "copied: spring, visit, yuki" in result.stdout and "  hop:" not in result.stdout
    nolima = tmp_path / "nolima.jsonl"
    lines = [
        _line(c.case_id, c.question, c.evidence[0].text, c.oracle.answer) for c in load_needle_cases("nolima")
    ]
    nolima.write_text("".join(lines), encoding="utf-8")
    clean = invoke("cases", "check", nolima)
    assert clean.exit_code == 0, clean.output
    assert f"{len(lines)} cases" in clean.stdout and "0 share content words" in clean.stdout


def test_a_missing_or_bad_case_file_is_one_line(tmp_path: Path) -> None:
    assert_bad_input(invoke("cases", "check", tmp_path / "none.jsonl"), "not found")
    (tmp_path / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    assert invoke("cases", "check", tmp_path / "bad.jsonl").exit_code == 2
    assert_bad_input(invoke("cases", tmp_path, tmp_path / "x.jsonl"), "cases check FILE")
