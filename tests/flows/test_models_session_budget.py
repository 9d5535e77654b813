"""A ``--models`` session is one unit for its budget and says how its prompts relate: ``--max-cost``
is one budget over every subject (each of three alone would fit, together they do not), and
subjects that differ in their system prompt get the same cases re-rendered, said in the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rotscope.modes.models_session import IDENTICAL, RERENDERED, session_prompts
from rotscope.store import RunStore
from tests.support.cli_helpers import invoke

MODELS = ["fake-remote/lexical", "fake-remote/lexical-recent", "fake-remote/curve-600"]
FOLDERS = ["fake-remote-lexical", "fake-remote-lexical-recent", "fake-remote-curve-600"]
GRID: dict[str, Any] = {
    "name": "exp",
    "model": "fake/lexical",
    "tasks": ["niah"],
    "lengths": [256],
    "depths": ["beginning", "end"],
    "limit": 4,
    "cache": {"enabled": False},
    "limits": {"fake-remote": {"concurrency": 1}},
    "prices": {model: {"input": 1.0, "output": 4.0} for model in MODELS},
}


def _experiment(folder: Path, **changes: Any) -> Path:
    path = folder / "exp.yaml"
    path.write_text(yaml.safe_dump({**GRID, **changes}), encoding="utf-8")
    return path


def _spent(run_dir: Path) -> float:
    with RunStore.read(run_dir) as store:
        return store.spent()


def test_max_cost_is_one_budget_over_every_subject(tmp_path: Path) -> None:
    experiment = _experiment(tmp_path)
    full = tmp_path / "full"
    done = invoke("run", experiment, "--models", ",".join(MODELS), "--out", full)
    assert done.exit_code == 0, done.output
    each = [_spent(full / folder) for folder in FOLDERS]
    assert min(each) > 0
    budget = max(each) * 1.5  # any one subject fits, the three together do not
    out = tmp_path / "budget"
    stopped = invoke("run", experiment, "--models", ",".join(MODELS), "--out", out, "--max-cost", f"{budget}")
    assert stopped.exit_code == 4, stopped.output
    spent = [_spent(out / folder) for folder in FOLDERS]
    assert sum(spent) <= budget + 1e-12
    assert sum(spent) < sum(each)
    assert sum(1 for value in spent if value > 0) >= 2  # interleaved: the budget is shared, not the first's


def test_subjects_with_another_system_prompt_are_re_rendered_and_the_summary_says_so(tmp_path: Path) -> None:
    subjects = [
        {"name": "plain", "model": "fake/lexical"},
        {"name": "terse", "model": "fake/lexical", "system_prompt": "Answer in one word."},
    ]
    experiment = _experiment(tmp_path, subjects=subjects)
    out = tmp_path / "session"
    done = invoke("run", experiment, "--models", "plain,terse", "--out", out)
    assert done.exit_code == 0, done.output
    assert session_prompts(out) == RERENDERED
    assert f"prompts: {RERENDERED}" in " ".join(done.stdout.split())
    with RunStore.read(out / "plain") as plain, RunStore.read(out / "terse") as terse:
        plain_rows = {(row["case_id"], row["length_target"], row["position"]) for row in plain.rows()}
        terse_rows = {(row["case_id"], row["length_target"], row["position"]) for row in terse.rows()}
    assert plain_rows == terse_rows and plain_rows  # the same cases and layouts
    same = tmp_path / "same"
    assert (
        invoke(
            "run", _experiment(tmp_path), "--models", "fake/lexical,fake/lexical-recent", "--out", same
        ).exit_code
        == 0
    )
    assert session_prompts(same) == IDENTICAL
