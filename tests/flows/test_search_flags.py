"""``rotscope run --search`` with the flags a search cannot take silently: ``--dry-run`` calls no
model and prints the worst case first; ``--pair`` and ``--plan`` are refused in one line; a
default cap a family cannot fill is refused before any call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_helpers import assert_bad_input, case_file, count_fake_calls, invoke, nonsense_corpus

PRICE = {"input": 1000.0, "output": 2000.0}  # USD per million tokens: a dry run's cost is visible


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model call made while the test runs (each is answered as the fake would)."""
    return count_fake_calls(monkeypatch)


def experiment(tmp_path: Path, **fields: Any) -> Path:
    corpus = nonsense_corpus(tmp_path / "corpus", files=4, lines=300)
    search = {"definition": "nolima-0.85", "range": [300, 2400], "resolution": 3.0, "cap": 64, "batch": 16}
    config = {
        "name": "search",
        "model": "fake/curve-1000",
        "tasks": ["cases"],
        "cases": str(case_file(tmp_path / "cases.jsonl")),
        "depths": [0.1, 0.5, 0.9],
        "lengths": [256],
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        "prices": {"fake/curve-1000": PRICE},
        "search": {**search, **fields.pop("search", {})},
        **fields,
    }
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_search_dry_run_calls_nothing_and_prints_the_worst_case_first(
    tmp_path: Path, calls: list[str]
) -> None:
    config = experiment(tmp_path)
    result = invoke("run", config, "--search", "--dry-run", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert calls == [] and not (tmp_path / "out").exists()
    first = " ".join(result.stdout.split()).split("first batch")[0]
    assert first.startswith("search worst case: at most ")
    # fine grid over [300, 2400] at resolution 3.0 (5 lengths) and the base, 64 instances, 3 depths
    assert "at most 1,152 calls (5 grid lengths and the base × the cap of 64 instances × 3 calls" in first
    tokens = int(re.search(r"prompt tokens about ([\d,]+)", first).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert tokens == 64 * 3 * (300 + 505 + 849 + 1427 + 2400 + 256)
    output = 1152 * 32  # the reply budget of a needle's phrase (generation.max_tokens unset)
    cost = (tokens * PRICE["input"] + output * PRICE["output"]) / 1e6
    assert f"estimated cost at most ${cost:,.4f}" in first
    assert "search.cap 64 is below 128" in result.stderr  # the user's cap, honoured with a warning
    assert "planned and verified at 256, 300, 2,400 tokens" in " ".join(result.stdout.split())


def test_a_search_dry_run_states_the_budget_that_stops_it_sooner(tmp_path: Path, calls: list[str]) -> None:
    config = experiment(tmp_path)
    result = invoke("run", config, "--search", "--dry-run", "--max-calls", "300", "--max-cost", "2")
    assert result.exit_code == 0, result.output
    assert calls == []
    assert "the budget stops it sooner (max_calls 300, max_cost $2.0000)" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    "flags",
    [
        ("--pair", "fake/curve-1000,fake/curve-2000"),
        ("--plan", "plan.json"),
        ("--allow-deviation",),
    ],
)
def test_a_search_refuses_pair_and_plan_in_one_line(
    tmp_path: Path, calls: list[str], flags: tuple[str, ...]
) -> None:
    (tmp_path / "plan.json").write_text("{}", encoding="utf-8")
    flags = tuple(str(tmp_path / flag) if flag == "plan.json" else flag for flag in flags)
    result = invoke("run", experiment(tmp_path), "--search", "--out", tmp_path / "out", *flags)
    assert_bad_input(result, "--search takes neither --pair nor --plan")
    assert calls == [] and not (tmp_path / "out").exists()


def test_a_resumed_search_refuses_a_dry_run_and_a_pair(tmp_path: Path, calls: list[str]) -> None:
    config = experiment(tmp_path, search={"max_calls": 100})
    assert invoke("run", config, "--search", "--out", tmp_path / "out").exit_code == 4
    made = len(calls)
    assert made > 0
    for flags in (("--dry-run",), ("--pair", "fake/curve-1000,fake/curve-2000")):
        result = invoke("run", "--resume", tmp_path / "out", "--max-calls", "100000", *flags)
        assert_bad_input(result, "--resume of a search", flags[0])
    assert len(calls) == made
    record = json.loads((tmp_path / "out" / "search.json").read_text(encoding="utf-8"))
    assert record["verdict"] == "inconclusive"


def test_a_family_with_too_few_cases_for_the_default_cap_is_refused_before_any_call(
    tmp_path: Path, calls: list[str]
) -> None:
    data = yaml.safe_load(experiment(tmp_path).read_text(encoding="utf-8"))
    del data["search"]["cap"]
    path = tmp_path / "default-cap.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    for flags in ((), ("--dry-run",)):
        result = invoke("run", path, "--search", "--out", tmp_path / "out", *flags)
        assert_bad_input(result, "search.cap", "cases has 64 cases", "128")
    assert calls == [] and not (tmp_path / "out").exists()
