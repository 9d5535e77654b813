"""``rotscope run --dry-run`` in every mode of ``run`` (issue 35, item 2): the plain grid, under a
frozen ``--plan``, a paired session (``--pair``, with and without a plan), a session the model
writes itself (``filler.assistant: model``) and a search (``--search``). Each one calls no model
and writes nothing: no run folder, no file anywhere under the working folder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_helpers import case_file, count_fake_calls, invoke, nonsense_corpus

PAIR = "fake/lexical,fake/lexical-recent"


def _tree(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder of the command (a default ``runs/NAME`` would land in it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _experiment(folder: Path, lines: int = 40, **fields: Any) -> Path:
    corpus = nonsense_corpus(folder / "corpus", files=4, lines=lines)
    data: dict[str, Any] = {
        "name": "dry",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
        "limit": 3,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        **fields,
    }
    path = folder / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _self_session(folder: Path) -> Path:
    filler = {"kind": "session", "assistant": "model", "variants": 1, "note_tokens": 16}
    return _experiment(folder, name="selfgen", model="fake/echo", lengths=[512, 2048], filler=filler)


def _search(folder: Path) -> Path:
    search = {"definition": "nolima-0.85", "range": [300, 2400], "resolution": 3.0, "cap": 64, "batch": 16}
    return _experiment(
        folder,
        lines=300,
        name="search",
        model="fake/curve-1000",
        tasks=["cases"],
        cases=str(case_file(folder / "cases.jsonl")),
        depths=[0.1, 0.5, 0.9],
        lengths=[256],
        controls=False,
        limit=None,
        search=search,
    )


def _frozen(folder: Path, config: Path) -> Path:
    plan = folder / "plan.json"
    assert invoke("plan", config, "-o", plan).exit_code == 0
    return plan


MODES = {
    "grid": (lambda folder: [_experiment(folder)], "work items"),
    "plan": (
        lambda folder: [_experiment(folder), "--plan", _frozen(folder, _experiment(folder))],
        "work items",
    ),
    "pair": (lambda folder: [_experiment(folder), "--pair", PAIR], "candidate:"),
    "pair-plan": (
        lambda folder: [_experiment(folder), "--pair", PAIR, "--plan", _frozen(folder, _experiment(folder))],
        "candidate:",
    ),
    "self-session": (lambda folder: [_self_session(folder)], "come on top, one per note"),
    "search": (lambda folder: [_search(folder), "--search"], "search worst case"),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_of_run_honours_dry_run(here: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    make, shown = MODES[mode]
    args = make(here)
    before = _tree(here)
    calls = count_fake_calls(monkeypatch)
    result = invoke("run", *args, "--dry-run", "--out", here / "out")
    assert result.exit_code == 0, (result.output, result.exception)
    assert calls == [], calls  # a dry run spends nothing
    assert not (here / "out").exists()
    assert _tree(here) == before, _tree(here) - before  # nor writes anything, a default folder included
    assert shown in " ".join(result.stdout.split())
    assert "Traceback" not in result.output


def test_a_paired_dry_run_shows_both_subjects(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_fake_calls(monkeypatch)
    result = invoke("run", _experiment(here), "--pair", PAIR, "--dry-run")  # no --out needed to plan
    assert result.exit_code == 0, result.output
    assert calls == []
    text = result.stdout
    baseline, candidate = text.index("baseline:"), text.index("candidate:")
    assert baseline < candidate
    assert "for fake/lexical" in text[baseline:candidate]
    assert "for fake/lexical-recent" in text[candidate:]
    each = [int(n.replace(",", "")) for n in re.findall(r"calls: ([\d,]+) ", text)]
    assert len(each) == 2 and f"paired session: {sum(each):,} calls in all ({each[0]:,} + {each[1]:,}" in text
