"""Failures become cases: ``rotscope cases RUN --failing`` writes a case-file line per failing case,
valid against the shipped schema, with where it failed in ``origin`` (never in ``slices``) and
pinned there; run again on the same model, the pinned cases fail exactly where they failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from rotscope.store import RunStore
from rotscope.tasks import get_task
from rotscope.tasks.case_lines import case_line
from rotscope.tasks.cases import load_case_file, shipped_schema
from tests.support.case_helpers import CASES, POSITIONS
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

Layout = tuple[str, int, str | None]


def _config(tmp_path: Path, name: str, **fields: Any) -> Path:
    data: dict[str, Any] = {
        "model": "fake/lexical-recent",
        "tasks": ["niah", "competitive"],
        "lengths": [300, 600],
        "depths": POSITIONS,
        "limit": 3,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _run(config: Path, out: Path) -> list[dict[str, Any]]:
    result = invoke("run", config, "--out", out)
    assert result.exit_code == 0, result.output
    with RunStore.read(out) as store:
        return [dict(row) for row in store.rows()]


def _failed(rows: list[dict[str, Any]]) -> set[Layout]:
    return {
        (row["case_id"], row["length_target"], row["position"])
        for row in rows
        if row["status"] == "ok" and row["outcome"] != "correct" and not row["control"]
    }


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_failing_generated_cases_validate_and_reproduce_where_they_failed(tmp_path: Path) -> None:
    first = _run(_config(tmp_path, "first"), tmp_path / "first")
    failed = _failed(first)
    passed = {(r["case_id"], r["length_target"], r["position"]) for r in first if not r["control"]} - failed
    assert failed and passed  # lexical-recent misses the early needles only

    written = tmp_path / "new-cases.jsonl"
    result = invoke("cases", tmp_path / "first", "--failing", "-o", written)
    assert result.exit_code == 0, result.output
    lines = _lines(written)
    assert f"{len(lines)} cases from {len(failed)} failing rows" in result.output
    validator = jsonschema.Draft202012Validator(shipped_schema())
    for line in lines:
        validator.validate(line)
        origins = line["origin"]
        assert {origin["run"] for origin in origins} == {"first"}
        assert {origin["model"] for origin in origins} == {"fake/lexical-recent"}
        assert not {"origin", "run", "model", "length", "position"} & set(line["slices"])
    assert {line["case_id"] for line in lines} == {case_id for case_id, _, _ in failed}

    # the same question, evidence bytes and accepted answers as the generated case
    niah = next(case for case in get_task("niah").cases() if case.case_id == "niah-01")
    line = next(line for line in lines if line["case_id"] == "niah-01")
    assert line["question"] == niah.question
    assert [d["text"] for d in line["documents"]] == [e.text for e in niah.evidence]
    assert line["claims"]["answer"] == list(niah.oracle.accepted())
    assert line["slices"] == {"family": "niah"}

    again = _run(
        _config(
            tmp_path,
            "again",
            tasks=["cases"],
            cases=str(written),
            controls=False,
            limit=None,
            lengths=[300, 900],
        ),
        tmp_path / "again",
    )
    ran = {(row["case_id"], row["length_target"], row["position"]) for row in again}
    assert ran == failed  # exactly there and only there: not at 900, not at the layouts that passed
    assert _failed(again) == failed


def test_a_case_file_case_is_written_as_its_own_line_with_origin(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(record) + "\n" for record in CASES), encoding="utf-8")
    config = _config(tmp_path, "own", tasks=["cases"], cases=str(cases), limit=None)
    rows = _run(config, tmp_path / "own")
    failed = _failed(rows)
    # lexical-recent gets the memo case wrong early on and names the harbour distractor's forbidden claim
    assert {case_id for case_id, _, _ in failed} == {"server-code", "harbour-master"}
    result = invoke("cases", tmp_path / "own", "--failing", "--no-pin")
    assert result.exit_code == 0, result.output
    lines = [json.loads(text) for text in result.stdout.splitlines()]
    assert [{key: value for key, value in line.items() if key != "origin"} for line in lines] == CASES
    assert all("pin" not in line for line in lines)
    origins = {(o["case_id"], o["length"], o["position"]) for line in lines for o in line["origin"]}
    assert origins == failed


def test_without_failing_every_case_is_written_unpinned(tmp_path: Path) -> None:
    _run(_config(tmp_path, "all", limit=2, lengths=[300], depths=["end"]), tmp_path / "all")
    result = invoke("cases", tmp_path / "all")
    assert result.exit_code == 0, result.output
    lines = [json.loads(text) for text in result.stdout.splitlines()]
    assert [line["case_id"] for line in lines] == [
        "niah-01", "niah-02", "niah-01.absent", "niah-02.absent",
        "competitive-01", "competitive-02", "competitive-01.absent", "competitive-02.absent",
    ]  # fmt: skip
    assert all("origin" not in line and "pin" not in line for line in lines)
    assert all(line["abstain"] for line in lines if line["case_id"].endswith(".absent"))


def test_a_pin_runs_a_case_there_only_while_others_use_the_grid(tmp_path: Path) -> None:
    pinned = {**CASES[0], "pin": [{"length": 450, "position": "@20"}]}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(pinned) + "\n" + json.dumps(CASES[1]) + "\n", encoding="utf-8")
    rows = _run(
        _config(tmp_path, "pin", tasks=["cases"], cases=str(cases), limit=None, depths=["midpoint"]),
        tmp_path / "pin",
    )
    layouts = {(r["case_id"], r["length_target"], r["position"], bool(r["control"])) for r in rows}
    assert layouts == {
        ("server-code", 450, "@20", False),
        ("server-code~absent", 450, "absent", True),
        ("harbour-master", 300, "midpoint", False),
        ("harbour-master", 600, "midpoint", False),
        ("harbour-master~absent", 300, "absent", True),
        ("harbour-master~absent", 600, "absent", True),
    }
    assert load_case_file(cases)[0].pins == ((450, "@20"),)
    written = invoke("cases", tmp_path / "pin")  # every case as it is, its pin kept
    assert written.exit_code == 0, written.output
    assert json.loads(written.stdout.splitlines()[0]) == pinned


def test_a_bad_pin_or_run_folder_is_one_line_of_bad_input(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({**CASES[0], "pin": [{"length": 300, "position": "middle"}]}) + "\n")
    result = invoke(
        "run", _config(tmp_path, "bad", tasks=["cases"], cases=str(cases)), "--out", tmp_path / "x"
    )
    assert_bad_input(result, f"{cases}:1", "'pin[0].position'", "unknown position 'middle'")
    assert_bad_input(invoke("cases", tmp_path / "nowhere", "--failing"), "not a run folder")


def test_an_absent_control_becomes_an_abstain_line() -> None:
    niah = next(iter(get_task("niah").cases()))
    line = case_line(niah.absent_control())
    assert line == {
        "case_id": f"{niah.case_id}.absent",
        "question": niah.question,
        "distractors": [],
        "abstain": True,
        "slices": {"family": "niah"},
    }
