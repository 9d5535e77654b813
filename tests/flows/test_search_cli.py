"""``rotscope run CONFIG --search`` end to end on the scripted ``fake/curve-MIDPOINT`` model: the
search brackets the known truth, ``show`` prints it, a budget stop is a clean stop (exit 4) that
``--resume DIR --max-calls N`` continues, and a search interrupted mid-step resumes to the same
decisions as one that ran through."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.backends.fake import FakeBackend
from rotscope.types import Completion, GenerateRequest
from tests.support.cli_helpers import assert_bad_input, case_file, invoke, nonsense_corpus


def experiment(tmp_path: Path, midpoint: int, **search: Any) -> Path:
    corpus = nonsense_corpus(tmp_path / "corpus", files=4, lines=300)
    config = {
        "name": "search",
        "model": f"fake/curve-{midpoint}",
        "tasks": ["cases"],
        "cases": str(case_file(tmp_path / "cases.jsonl")),
        "depths": [0.1, 0.5, 0.9],
        "lengths": [256],
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        "search": {"definition": "absolute-0.5", "range": [300, 2400], "resolution": 3.0, "cap": 64,
                   "batch": 16, **search},
    }  # fmt: skip
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def through(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """``through(MIDPOINT)``: the folder of a search of ``experiment(…, MIDPOINT)`` that ran
    through, run once per midpoint in this module; the tests read it and never write into it."""
    made: dict[int, Path] = {}

    def run(midpoint: int) -> Path:
        if midpoint not in made:
            root = tmp_path_factory.mktemp(f"through-{midpoint}")
            result = invoke("run", experiment(root, midpoint), "--search", "--out", root / "through")
            assert result.exit_code == 0, result.output
            made[midpoint] = root / "through"
        return made[midpoint]

    return run


def record(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "search.json").read_text(encoding="utf-8"))


def test_the_search_brackets_the_scripted_truth_and_show_prints_it(tmp_path: Path) -> None:
    result = invoke("run", experiment(tmp_path, 1000), "--search", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    found = record(tmp_path / "out")
    truth = 1000.0  # absolute-0.5: where the mean chance is one half, the midpoint (u is symmetric)
    assert found["verdict"] == "decided", found
    low, high = found["bracket"]["passes"], found["bracket"]["fails"]
    assert low <= truth < high and high / low <= 3.0 + 1e-3
    assert found["calls"] <= found["fixed_grid"]["calls"] + 64 * 3  # never far above the grid
    shown = invoke("show", tmp_path / "out")
    assert shown.exit_code == 0
    assert f"effective length {low:,} tokens: passes at {low:,}" in shown.output
    assert f"fails at {high:,}" in shown.output and "95%" in shown.output
    assert f"instances shared {found['shared_haystacks']} haystack variants" in shown.output
    decided = [d["instances"] for d in found["decisions"] if d["state"] != "open"]
    assert found["fixed_grid_hindsight"]["instances_per_length"] == max(decided)
    assert found["fixed_grid"]["instances_per_length"] == found["cap"] == 64  # every case, every length
    assert 1 <= found["shared_haystacks"] <= 4  # 64 instances, a corpus of 4 documents: shared haystacks
    report = invoke("report", tmp_path / "out")
    assert report.exit_code == 0, report.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert f"effective length {low:,} tokens" in html and "in order of testing" in html
    order = [d["length"] for d in found["decisions"]]
    first_seen = list(dict.fromkeys(order))
    for number in range(1, len(first_seen) + 1):  # each tested length labelled by its testing order
        assert f'"#{number}"' in html
    assert f"<td>1</td><td>{order[0]:,}</td>" in html  # the decisions table starts with the first step
    assert str(tmp_path) not in html  # no absolute path of this machine


def test_a_budget_stop_is_clean_and_a_larger_budget_continues_the_same_search(
    tmp_path: Path, through: Callable[[int], Path]
) -> None:
    config = experiment(tmp_path, 850)
    stopped = invoke("run", config, "--search", "--out", tmp_path / "part", "--max-calls", "100")
    assert stopped.exit_code == 4, stopped.output
    assert "--max-calls LARGER" in stopped.stderr
    assert record(tmp_path / "part")["verdict"] == "inconclusive"
    assert record(tmp_path / "part")["calls"] <= 100
    resumed = invoke("run", "--resume", tmp_path / "part", "--max-calls", "100000")
    assert resumed.exit_code == 0, resumed.output
    part, full = record(tmp_path / "part"), record(through(850))
    assert part["decisions"] == full["decisions"] and part["bracket"] == full["bracket"]
    assert part["calls"] == full["calls"]


@pytest.mark.parametrize("midpoint", [400, 520, 850, 1400, 2000])
def test_a_search_interrupted_mid_step_resumes_to_the_same_decisions(
    tmp_path: Path, midpoint: int, monkeypatch: pytest.MonkeyPatch, through: Callable[[int], Path]
) -> None:
    config = experiment(tmp_path, midpoint)
    through_run = through(midpoint)
    original = FakeBackend.generate
    calls = {"n": 0}

    async def interrupting(self: FakeBackend, request: GenerateRequest) -> Completion:
        calls["n"] += 1
        if calls["n"] == 60:  # inside the second length's step
            raise KeyboardInterrupt
        return await original(self, request)

    monkeypatch.setattr(FakeBackend, "generate", interrupting)
    killed = invoke("run", config, "--search", "--out", tmp_path / "killed")
    assert killed.exit_code == 130, killed.output
    assert f"rotscope run --resume {tmp_path / 'killed'}" in killed.stderr
    assert not (tmp_path / "killed" / "search.json").exists()
    monkeypatch.setattr(FakeBackend, "generate", original)
    assert invoke("run", "--resume", tmp_path / "killed").exit_code == 0
    again, ran = record(tmp_path / "killed"), record(through_run)
    assert again["decisions"] == ran["decisions"] and again["verdict"] == ran["verdict"]
    assert again["steps"] == ran["steps"]


def test_search_without_a_section_or_with_too_large_a_cap_is_bad_input(tmp_path: Path) -> None:
    config = experiment(tmp_path, 850)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert_bad_input(
        invoke("run", config, "--search", "--out", tmp_path / "big", "--limit", "3"), "search.cap"
    )
    del data["search"]
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert_bad_input(invoke("run", plain, "--search", "--out", tmp_path / "none"), "search: section")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [({"definition": "ruler-0.8"}, "search.definition"), ({"range": [800, 400]}, "search.range"),
     ({"resolution": 1.0}, "search.resolution")],
)  # fmt: skip
def test_a_bad_search_section_is_bad_input(tmp_path: Path, change: dict[str, Any], fragment: str) -> None:
    result = invoke("run", experiment(tmp_path, 850, **change), "--search", "--out", tmp_path / "out")
    assert_bad_input(result, fragment)


def test_a_search_budget_without_a_search_is_bad_input(tmp_path: Path) -> None:
    result = invoke("run", "--model", "fake/lexical", "--max-calls", "5", "--out", tmp_path / "out")
    assert_bad_input(result, "--max-calls", "--search")
    assert not (tmp_path / "out").exists()


def test_show_on_an_unfinished_search_says_to_resume_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def interrupting(self: FakeBackend, request: GenerateRequest) -> Completion:
        raise KeyboardInterrupt

    monkeypatch.setattr(FakeBackend, "generate", interrupting)
    assert invoke("run", experiment(tmp_path, 850), "--search", "--out", tmp_path / "out").exit_code == 130
    assert_bad_input(invoke("show", tmp_path / "out"), "has not finished", "--resume")
    assert_bad_input(invoke("report", tmp_path / "out"), "has not finished", "--resume")


def test_the_curve_model_is_listed_and_a_bad_curve_name_is_bad_input(tmp_path: Path) -> None:
    assert "fake/curve-MIDPOINT" in invoke("models").output
    assert_bad_input(invoke("run", "--model", "fake/curve-x", "--out", tmp_path / "out"), "curve-MIDPOINT")


def test_a_usd_budget_spans_the_steps_and_a_larger_one_continues_the_same_search(tmp_path: Path) -> None:
    config = experiment(tmp_path, 850)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["prices"] = {"fake/curve-850": {"input": 1000.0, "output": 0.0}}  # USD per million tokens
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert invoke("run", config, "--search", "--out", tmp_path / "full").exit_code == 0
    full = record(tmp_path / "full")
    assert full["cost"] > 0 and full["budget"]["max_cost"] is None
    budget = full["cost"] / 3
    budgets = ("--max-cost", f"{budget:.6f}", "--max-calls", "100000")
    stopped = invoke("run", config, "--search", "--out", tmp_path / "part", *budgets)
    assert stopped.exit_code == 4, stopped.output
    # Only the budget that stopped the search is suggested, not the call budget that did not.
    assert "--max-cost LARGER" in stopped.stderr and "--max-calls" not in stopped.stderr
    part = record(tmp_path / "part")
    assert part["verdict"] == "inconclusive" and part["stopped_by"] == ["max_cost"]
    assert 0 < part["cost"] <= budget + 1e-9
    assert len(part["decisions"]) < len(full["decisions"])
    resumed = invoke("run", "--resume", tmp_path / "part", "--max-cost", f"{10 * full['cost']:.6f}")
    assert resumed.exit_code == 0, resumed.output
    part = record(tmp_path / "part")
    assert part["decisions"] == full["decisions"] and part["bracket"] == full["bracket"]
    assert part["calls"] == full["calls"] and abs(part["cost"] - full["cost"]) < 1e-6


SLOW_CLI = Path(__file__).resolve().parents[1] / "support" / "slow_rotscope.py"


def _ok_rows(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT count(*) FROM items WHERE status = 'ok'").fetchone()[0])
    except sqlite3.Error:  # not created yet, or its tables not yet written
        return 0


def test_a_search_killed_with_sigkill_in_a_later_step_resumes_to_the_same_decisions(tmp_path: Path) -> None:
    """SIGKILL (no handler runs) while the search's second step is half done: the resume takes the
    decisions of a search that ran through, and every item of the killed step is done once."""
    config = experiment(tmp_path, 520)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["model"] = "slow-remote/curve-520"  # the curve model, each call 20 ms
    data["cache"] = {"enabled": False}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "SLOW_ROTSCOPE_LATENCY_S": "0.02"}

    def slow_rotscope(*args: str | Path) -> list[str]:
        return [sys.executable, str(SLOW_CLI), *map(str, args)]

    through = subprocess.run(
        slow_rotscope("run", config, "--search", "--out", tmp_path / "through"), env=env, capture_output=True
    )
    assert through.returncode == 0, through.stderr
    killed = tmp_path / "killed"
    command = slow_rotscope("run", config, "--search", "--out", killed)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            second = sorted((killed / "steps").glob("02-*/run.db")) if (killed / "steps").is_dir() else []
            if second and _ok_rows(second[0]) >= 5:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the search ended before it could be killed"
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not (killed / "search.json").exists()
    resumed = subprocess.run(slow_rotscope("run", "--resume", killed), env=env, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr
    again, through = record(killed), record(tmp_path / "through")
    assert again["decisions"] == through["decisions"] and again["bracket"] == through["bracket"]
    assert again["steps"] == through["steps"] and again["calls"] == through["calls"]


def test_a_step_with_error_rows_stops_the_search_and_resume_retries_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through: Callable[[int], Path]
) -> None:
    """A model failure is never a wrong answer: the search stops before deciding on a step with
    error rows, and the resume retries them and decides as a search without failures does."""
    config = experiment(tmp_path, 850)
    original = FakeBackend.generate
    calls = {"n": 0}

    async def failing(self: FakeBackend, request: GenerateRequest) -> Completion:
        calls["n"] += 1
        if calls["n"] in (20, 21):  # two failures inside the first step
            return Completion("", error="engine: simulated failure")
        return await original(self, request)

    monkeypatch.setattr(FakeBackend, "generate", failing)
    stopped = invoke("run", config, "--search", "--out", tmp_path / "failed")
    assert stopped.exit_code not in (0, 2), stopped.output
    assert "2 error rows" in stopped.stderr and "--resume" in stopped.stderr
    assert not (tmp_path / "failed" / "search.json").exists()
    monkeypatch.setattr(FakeBackend, "generate", original)
    assert invoke("run", "--resume", tmp_path / "failed").exit_code == 0
    again, ran = record(tmp_path / "failed"), record(through(850))
    assert again["decisions"] == ran["decisions"] and again["bracket"] == ran["bracket"]


def test_a_damaged_record_or_a_self_written_session_is_bad_input_a_smaller_budget_changes_nothing(
    tmp_path: Path,
) -> None:
    config = experiment(tmp_path, 850)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["prices"] = {"fake/curve-850": {"input": 1000.0, "output": 0.0}}
    data["max_cost"] = 1e6
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert invoke("run", config, "--search", "--out", tmp_path / "out").exit_code == 0
    smaller = invoke("run", "--resume", tmp_path / "out", "--max-cost", "1")  # a finished search is kept
    assert smaller.exit_code == 0 and "had finished (decided)" in smaller.output, smaller.output
    (tmp_path / "out" / "search.json").write_text("{not json", encoding="utf-8")
    assert_bad_input(invoke("show", tmp_path / "out"), "search.json", "not a readable search record")
    assert_bad_input(invoke("report", tmp_path / "out"), "search.json", "not a readable search record")
    data["filler"] = {"kind": "session", "assistant": "model"}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert_bad_input(invoke("run", config, "--search", "--out", tmp_path / "self"), "assistant: model")


def test_a_likelihood_search_decides_on_the_answer_probability(tmp_path: Path) -> None:
    """``--score likelihood``: the steps keep only the gold answer's probability (no replies), the
    search decides on it (the fake's chance at each length, whose mean crosses one half at the
    midpoint) and its record and result line say so."""
    out = tmp_path / "out"
    path = experiment(tmp_path, 1000)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    # niah's needles are read as likelihoods (a case file's answers of the cases family are not yet)
    config = {**{k: v for k, v in config.items() if k != "cases"}, "tasks": ["niah"]}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = invoke("run", path, "--search", "--score", "likelihood", "--out", out)
    assert result.exit_code == 0, result.output
    found = record(out)
    assert found["score"] == "likelihood" and found["verdict"] == "decided", found
    low, high = found["bracket"]["passes"], found["bracket"]["fails"]
    assert low <= 1000.0 < high
    first_step = out / "steps" / found["steps"][0] / "run.db"
    with sqlite3.connect(f"file:{first_step}?mode=ro", uri=True) as db:
        kept = db.execute("SELECT COUNT(*), COUNT(outcome), COUNT(answer_logprob) FROM items").fetchone()
    assert kept[0] > 0 and kept[1] == 0 and kept[2] == kept[0]
    shown = invoke("show", out)
    assert f"effective length {low:,} tokens on the answer's likelihood" in " ".join(shown.output.split())
