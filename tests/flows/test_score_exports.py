"""The answer's likelihood through exports and imports (issue 49): ``rotscope export`` carries
``answer_logprob``, ``answer_tokens``, ``first_token_prob`` and ``absent_logprob``; ``rotscope
import`` reads them as optional columns, so an export's likelihoods come back as they were, and
every view can stand on them; a bad one is one line, exit 2."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from tests.support.cli_helpers import assert_bad_input, invoke

LIKELIHOOD = ("answer_logprob", "answer_tokens", "first_token_prob", "absent_logprob")


def _file(tmp_path: Path) -> Path:
    """Six questions at two lengths, each with its answer's likelihood (two without one)."""
    lines = [f"item_id,instance_id,length_tokens,position,correct,{','.join(LIKELIHOOD)}\n"]
    for number in range(6):
        for length, correct, logprob in ((1000, 1, -0.1 - number / 10), (8000, number % 2, -1.5 - number)):
            likelihood = "" if number == 5 and length == 8000 else f"{logprob},{number + 1},0.8,-6.5"
            likelihood = likelihood or ",,,"
            lines.append(f"q{number},d{number},{length},end,{correct},{likelihood}\n")
    path = tmp_path / "results.csv"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _likelihoods(rows: list[dict[str, object]]) -> dict[tuple[str, int], tuple[object, ...]]:
    return {
        (str(row["case_id"]), int(str(row["length_target"]))): tuple(
            None if row[name] in ("", None) else float(str(row[name])) for name in LIKELIHOOD
        )
        for row in rows
    }


def test_an_import_keeps_the_likelihoods_and_an_export_gives_them_back(tmp_path: Path) -> None:
    source = _file(tmp_path)
    assert invoke("import", source, "--out", tmp_path / "run").exit_code == 0
    exported = invoke("export", tmp_path / "run", "--format", "jsonl")
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    found = _likelihoods(rows)
    assert found[("q2", 1000)] == (pytest.approx(-0.3), 3.0, 0.8, -6.5)
    assert found[("q5", 8000)] == (None, None, None, None)
    as_csv = invoke("export", tmp_path / "run", "--format", "csv")
    assert _likelihoods(list(csv.DictReader(io.StringIO(as_csv.stdout)))) == found
    # the export's columns import again as they were (its outcome as the file's correct)
    again = tmp_path / "again.jsonl"
    again.write_text(
        "".join(
            json.dumps(
                {
                    "item_id": row["case_id"],
                    "instance_id": row["instance_id"],
                    "length_tokens": row["length_target"],
                    "position": row["position"],
                    "correct": row["outcome"] == "correct",
                    **{name: row[name] for name in LIKELIHOOD},
                }
            )
            + "\n"
            for row in rows
        ),
        encoding="utf-8",
    )
    assert invoke("import", again, "--out", tmp_path / "run2").exit_code == 0
    back = [
        json.loads(line)
        for line in invoke("export", tmp_path / "run2", "--format", "jsonl").stdout.splitlines()
    ]
    assert _likelihoods(back) == found


def test_an_imported_run_stands_on_either_score(tmp_path: Path) -> None:
    assert invoke("import", _file(tmp_path), "--out", tmp_path / "run").exit_code == 0
    summary = json.loads(invoke("show", tmp_path / "run", "--json").stdout)
    assert summary["score"] == "accuracy"
    shown = invoke("show", tmp_path / "run", "--json", "--score", "likelihood")
    assert shown.exit_code == 0, shown.output
    likelihood = json.loads(shown.stdout)
    assert likelihood["score"] == "likelihood"
    short = next(line for line in likelihood["lengths"] if line["length"] == 1000)
    assert short["accuracy"] == pytest.approx(sum(math.exp(-0.1 - n / 10) for n in range(6)) / 6)
    long = next(line for line in likelihood["lengths"] if line["length"] == 8000)
    assert long["n"] == 5  # the question without a likelihood is left out, not scored 0


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("answer_logprob", "0.5", "'0.5' is above 0 (a log-probability)"),
        ("first_token_prob", "1.5", "'1.5' is outside [0, 1]"),
        ("answer_tokens", "0", "'0' is not a whole number >= 1"),
    ],
)
def test_a_bad_likelihood_is_one_line(tmp_path: Path, column: str, value: str, problem: str) -> None:
    (tmp_path / "bad.csv").write_text(
        f"item_id,instance_id,length_tokens,position,correct,{column}\nq1,d1,1000,end,1,{value}\n",
        encoding="utf-8",
    )
    result = invoke("import", tmp_path / "bad.csv", "--out", tmp_path / "run")
    assert_bad_input(result, f"bad.csv: line 2, column {column}: {problem}")
