"""``rotscope cases check FILE``: a question that copies its evidence's words is named (exit 1);
the nolima family's own cases, written as a case file, pass (exit 0); a bad file is one line, exit 2.
At run time the same check warns in one line and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rotscope.tasks.needles import load_needle_cases
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus


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


def _nolima_file(path: Path) -> Path:
    lines = [
        _line(c.case_id, c.question, c.evidence[0].text, c.oracle.answer) for c in load_needle_cases("nolima")
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _run(tmp_path: Path, name: str, cases: Path) -> str:
    config = tmp_path / f"{name}.yaml"
    corpus = nonsense_corpus(tmp_path / "corpus")
    config.write_text(
        yaml.safe_dump(
            {
                "model": "fake/lexical",
                "tasks": ["cases"],
                "cases": str(cases),
                "limit": 2,
                "lengths": [300],
                "depths": ["midpoint"],
                "controls": False,
                "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            }
        ),
        encoding="utf-8",
    )
    result = invoke("run", config, "--out", tmp_path / name)
    assert result.exit_code == 0, result.output  # a warning, not a refusal
    return result.output


def test_a_run_warns_of_copied_questions_in_its_case_file_and_goes_on(tmp_path: Path) -> None:
    copied = tmp_path / "copied.jsonl"
    copied.write_text(
        _line("copied", "Which city did Yuki visit in spring?", "In spring Yuki visited Porto.", "Porto")
        + _line(
            "hop",
            "Which character has been to Portugal?",
            "Yuki lives next to the Torre dos Clerigos.",
            "Yuki",
        ),
        encoding="utf-8",
    )
    output = _run(tmp_path, "copied", copied)
    warning = [line for line in output.splitlines() if "share content words" in line]
    assert len(warning) == 1, output
    assert "1 of 2 questions" in warning[0] and "copied (spring, visit, yuki)" in warning[0]
    assert "hop (" not in warning[0]
    assert "share content words" not in _run(tmp_path, "nolima", _nolima_file(tmp_path / "nolima.jsonl"))
