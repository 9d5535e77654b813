"""``rotscope import``: a CSV of per-item results with a known paired truth becomes a run folder
whose ``show --json`` gives the paired gap and interval of an independent computation on the raw
outcomes; every view of it (and the gate over two of them) says it was imported; a bad file is
one line naming its line and column, exit 2, and nothing is written."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from rotscope.records import RECORDS
from rotscope.stats import paired_gap
from rotscope.store import SCHEMA_VERSION
from tests.support.cli_helpers import assert_bad_input, invoke

QUESTIONS = 300
PER_INSTANCE = 3
"""Questions sharing a document (an instance): the gap is paired and clustered on it."""
SHORT, LONG = 1_000, 32_000
SHORT_P, LONG_P = 0.9, 0.7
"""The truth: the long context costs 0.2 of accuracy, paired on the same questions."""
NOTE = "(no prompts, spans or verification)"
HEADER = "item_id,instance_id,length_tokens,depth,correct,model,cost_usd,notes\n"


def _outcomes(seed: int, short_p: float, long_p: float) -> tuple[np.ndarray, np.ndarray]:
    """Each question's outcome at the short and the long length: the long one is wrong whenever
    the short one is, and also in a seeded share of the rest, so the paired difference is known."""
    rng = np.random.default_rng(seed)
    short = rng.random(QUESTIONS) < short_p
    long = short & (rng.random(QUESTIONS) < long_p / short_p)
    return short.astype(int), long.astype(int)


def _write_csv(path: Path, short: np.ndarray, long: np.ndarray, model: str) -> Path:
    lines = [HEADER]
    for question in range(QUESTIONS):
        instance = f"doc{question // PER_INSTANCE}"
        for length, outcome in ((SHORT, short[question]), (LONG, long[question])):
            lines.append(f"q{question},{instance},{length},,{outcome},{model},0.001,free text\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("import")
    short, long = _outcomes(7, SHORT_P, LONG_P)
    source = _write_csv(root / "results.csv", short, long, "model-a")
    result = invoke("import", source, "--out", root / "a")
    assert result.exit_code == 0, result.output
    assert f"{2 * QUESTIONS} rows imported from results.csv" in result.output
    base_short, base_long = _outcomes(8, 0.9, 0.9)
    baseline = _write_csv(root / "baseline.csv", base_short, base_long, "model-b")
    assert invoke("import", baseline, "--out", root / "b").exit_code == 0
    shown = invoke("show", root / "a", "--json")
    assert shown.exit_code == 0, shown.output
    return {"root": root, "short": short, "long": long, "summary": json.loads(shown.stdout)}


def _instance_means(outcomes: np.ndarray) -> dict[str, float]:
    by_instance: dict[str, list[int]] = defaultdict(list)
    for question, outcome in enumerate(outcomes):
        by_instance[f"doc{question // PER_INSTANCE}"].append(int(outcome))
    return {instance: float(np.mean(values)) for instance, values in by_instance.items()}


def test_show_json_gives_the_paired_gap_of_the_raw_outcomes(imported: dict[str, object]) -> None:
    summary = imported["summary"]
    assert isinstance(summary, dict)
    short, long = imported["short"], imported["long"]
    assert isinstance(short, np.ndarray) and isinstance(long, np.ndarray)
    expected = paired_gap(_instance_means(short), _instance_means(long))
    (task,) = summary["tasks"]
    (gap,) = task["degradation"]
    assert gap["length"] == LONG and gap["pairs"] == QUESTIONS // PER_INSTANCE
    assert gap["gap"] == pytest.approx(expected.estimate, abs=1e-12)
    assert gap["gap"] == pytest.approx(long.mean() - short.mean(), abs=1e-12)
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert gap["ci_low"] < LONG_P - SHORT_P < gap["ci_high"]  # the truth, -0.2, inside
    assert gap["ci_high"] < 0  # and the loss is shown
    accuracy = {cell["length"]: cell["accuracy"] for cell in summary["cells"]}
    assert accuracy == pytest.approx({SHORT: short.mean(), LONG: long.mean()})
    assert summary["cost"]["usd"] == pytest.approx(2 * QUESTIONS * 0.001)
    assert summary["model"] == "model-a"


def test_the_imported_summary_is_a_summary_record_marked_imported(imported: dict[str, object]) -> None:
    summary = imported["summary"]
    assert isinstance(summary, dict)
    RECORDS["summary"].validate(summary)
    marked = summary["imported"]
    assert marked["note"] == f"imported from results.csv {NOTE}"
    assert marked["format"] == "csv" and marked["items"] == 2 * QUESTIONS
    assert marked["ignored_columns"] == ["notes"]
    assert {cell["position"] for cell in summary["cells"]} == {"unknown"}
    root = imported["root"]
    assert isinstance(root, Path)
    with closing(sqlite3.connect(root / "a" / "run.db")) as db:  # a run store like any run's
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT count(*) FROM prompts").fetchone()[0] == 0


def test_every_view_says_the_folder_was_imported(imported: dict[str, object]) -> None:
    root = imported["root"]
    assert isinstance(root, Path)
    note = f"imported from results.csv {NOTE}"
    terminal = invoke("show", root / "a")
    assert terminal.exit_code == 0 and note in terminal.stdout
    markdown = invoke("show", root / "a", "--markdown")
    assert markdown.exit_code == 0 and note in markdown.stdout
    report = invoke("report", root / "a", "-o", root / "a.html")
    assert report.exit_code == 0, report.output
    html = (root / "a.html").read_text(encoding="utf-8")
    assert note in html and 'id="filter"' not in html  # no wrong answers to filter: no prompts
    assert "0.5 (range" not in html  # issue 51: no worst position where the file gives none
    assert "model time 0.0 s" not in html and "(the file gives no model time)" in html
    assert "Failure mix" not in html  # an import has no failure categories: no empty plot
    gate = invoke("gate", "--baseline", root / "b", "--candidate", root / "a", "--json")
    assert gate.exit_code == 1, gate.output  # the candidate lost 0.2 at 32K: FAIL
    record = json.loads(gate.stdout)
    assert record["candidate"]["imported"] == note
    assert record["baseline"]["imported"] == f"imported from baseline.csv {NOTE}"
    failed = {entry["length"] for entry in record["slices"] if entry["verdict"] == "FAIL"}
    assert failed == {LONG}
    printed = invoke("gate", "--baseline", root / "b", "--candidate", root / "a")
    assert f"candidate a: {note}" in printed.stdout
    resumed = invoke("run", "--resume", root / "a")
    assert_bad_input(resumed, note, "nothing to resume")
    assert_bad_input(invoke("cases", root / "a", "--failing"), note, "no cases to write")
    exported = invoke("export", root / "a", "--format", "csv")
    assert exported.exit_code == 0 and len(exported.stdout.splitlines()) == 1 + 2 * QUESTIONS


def test_the_gate_says_what_an_imported_run_lacks(imported: dict[str, object]) -> None:
    """No layout of an imported run is said not to have moved, and its rollback offers no
    ``cases --failing`` command (refused for an imported folder) but says why."""
    root = imported["root"]
    assert isinstance(root, Path)
    gate = invoke("gate", "--baseline", root / "b", "--candidate", root / "a", "--json")
    record = json.loads(gate.stdout)
    layouts = record["layouts"]
    assert layouts["spans_known"] is False and layouts["spans_moved"] == 0
    assert layouts["paired_layouts"] == 2 * QUESTIONS and layouts["answers_changed"] > 0
    assert not any(entry["layout_moved"] for entry in layouts["changed"])
    guidance = record["rollback"]
    assert guidance["cases_command"] is None
    lacking = "cannot be kept as cases from a: imported from results.csv"
    assert any(lacking in step for step in guidance["steps"])
    printed = invoke("gate", "--baseline", root / "b", "--candidate", root / "a")
    assert "layouts: not compared (an imported run has no prompts or token spans)" in printed.stdout
    assert "token spans moved" not in printed.stdout
    assert "rotscope cases a --failing" not in " ".join(printed.stdout.split())
    markdown = invoke("gate", "--baseline", root / "b", "--candidate", root / "a", "--markdown")
    assert "```bash" not in markdown.stdout and "(layout unknown: imported)" in markdown.stdout


def test_an_import_never_writes_into_a_folder_that_holds_something(imported: dict[str, object]) -> None:
    root = imported["root"]
    assert isinstance(root, Path)
    assert_bad_input(invoke("import", root / "baseline.csv", "--out", root / "a"), "holds a run already")


def test_the_same_import_again_finds_its_folder_whole_and_writes_nothing(imported: dict[str, object]) -> None:
    root = imported["root"]
    assert isinstance(root, Path)
    before = (root / "a" / "run.db").stat().st_mtime_ns, (root / "a" / "run.db").read_bytes()
    again = invoke("import", root / "results.csv", "--out", root / "a")
    assert again.exit_code == 0, again.output
    assert f"{2 * QUESTIONS} rows imported from results.csv" in again.output
    assert ((root / "a" / "run.db").stat().st_mtime_ns, (root / "a" / "run.db").read_bytes()) == before


def test_a_score_file_keeps_its_scores_as_partial_credit(tmp_path: Path) -> None:
    scores = [0.25, 1.0, 0.5, 0.0, 1.0, 0.75]
    lines = ["item_id,instance_id,length_tokens,position,correct\n"]
    lines += [f"q{i},d{i},4096,end,{score}\n" for i, score in enumerate(scores)]
    (tmp_path / "scores.csv").write_text("".join(lines), encoding="utf-8")
    assert invoke("import", tmp_path / "scores.csv", "--out", tmp_path / "run").exit_code == 0
    (cell,) = json.loads(invoke("show", tmp_path / "run", "--json").stdout)["cells"]
    assert cell["mean_score"] == pytest.approx(np.mean(scores))
    assert cell["correct"] == 2 and cell["position"] == "end" and cell["depth"] == 1.0


GOOD = "q1,d1,1000,0.5,1\n"
HEADERLESS = "item_id,instance_id,length_tokens,"
BAD_FILES = {
    "missing column": (HEADERLESS + "depth\nq1,d1,1000,0.5\n", "line 1: missing column correct"),
    "no place column": (HEADERLESS + "correct\nq1,d1,1000,1\n", "line 1: missing column depth or position"),
    "depth out of range": ("q1,d1,1000,1.5,1\n", "line 2, column depth: '1.5' is outside [0, 1]"),
    "correct out of range": (GOOD + "q2,d2,1000,0.5,2\n", "line 3, column correct: '2' is outside [0, 1]"),
    "non-numeric length": ("q1,d1,4k,0.5,1\n", "line 2, column length_tokens: '4k' is not a number"),
    "non-numeric correct": ("q1,d1,1000,0.5,yes\n", "line 2, column correct: 'yes' is not a number"),
    "duplicate item at one length": (
        GOOD + "q2,d1,1000,0.5,0\n" + "q1,d1,1000,0.5,0\n",
        "line 4, column item_id: 'q1' is already at length 1000, position 0.50 (line 2; reruns of one "
        "question ",
    ),
    "empty item id": (",d1,1000,0.5,1\n", "line 2, column item_id: empty"),
    "question in two instances": (
        GOOD + "q1,d2,2000,0.5,1\n",
        "line 3, column instance_id: item 'q1' is in instance 'd1'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_csv_is_one_line_naming_line_and_column(case: str, tmp_path: Path) -> None:
    body, expected = BAD_FILES[case]
    text = body if body.startswith(HEADERLESS) else HEADERLESS + "depth,correct\n" + body
    (tmp_path / "bad.csv").write_text(text, encoding="utf-8")
    result = invoke("import", tmp_path / "bad.csv", "--out", tmp_path / "run")
    assert_bad_input(result, "bad.csv: " + expected)
    assert not (tmp_path / "run").exists()


def test_a_bad_jsonl_line_is_named_and_a_good_one_imports(tmp_path: Path) -> None:
    good = {"item_id": "q1", "instance_id": "d1", "length_tokens": 512, "position": None, "correct": True}
    rows = [good, {**good, "length_tokens": 1024, "correct": 0, "model": "m", "prompt_tokens": 1030}]
    (tmp_path / "ok.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert invoke("import", tmp_path / "ok.jsonl", "--out", tmp_path / "ok").exit_code == 0
    summary = json.loads(invoke("show", tmp_path / "ok", "--json").stdout)
    assert [(c["length"], c["correct"], c["position"]) for c in summary["cells"]] == [
        (512, 1, "unknown"),
        (1024, 0, "unknown"),
    ]
    assert summary["model"] == "m" and summary["imported"]["format"] == "jsonl"
    (tmp_path / "bad.jsonl").write_text(json.dumps(good) + "\n{not json\n", encoding="utf-8")
    bad = invoke("import", tmp_path / "bad.jsonl", "--out", tmp_path / "b")
    assert_bad_input(bad, "bad.jsonl: line 2: not JSON")
    missing = {key: value for key, value in good.items() if key != "instance_id"}
    text = json.dumps(good) + "\n" + json.dumps(missing) + "\n"
    (tmp_path / "gap.jsonl").write_text(text, encoding="utf-8")
    gap = invoke("import", tmp_path / "gap.jsonl", "--out", tmp_path / "g")
    assert_bad_input(gap, "gap.jsonl: line 2: missing column instance_id")
    assert not (tmp_path / "b").exists() and not (tmp_path / "g").exists()


def test_a_pooled_gate_on_imports_counts_an_instance_two_tasks_share_once(tmp_path: Path) -> None:
    """Issue 51: 20 documents, each asked in two tasks: the gate's clusters are the 20 documents
    (an imported instance is one cluster across tasks), not 40."""
    rng = np.random.default_rng(4)
    for name in ("base", "cand"):
        lines = ["item_id,instance_id,length_tokens,depth,correct,task\n"]
        for task in ("qa", "summary"):
            for document in range(20):
                for length in (1_000, 8_000):
                    lines.append(
                        f"{task}-{document},doc{document},{length},0.5,{int(rng.random() < 0.8)},{task}\n"
                    )
        (tmp_path / f"{name}.csv").write_text("".join(lines), encoding="utf-8")
        assert invoke("import", tmp_path / f"{name}.csv", "--out", tmp_path / name).exit_code == 0
    gate = invoke("gate", "--baseline", tmp_path / "base", "--candidate", tmp_path / "cand", "--json")
    assert gate.exit_code in (0, 1, 3), gate.output
    record = json.loads(gate.stdout)
    assert record["tests"]["clustered_on"].startswith("20 cases"), record["tests"]
