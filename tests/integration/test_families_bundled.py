"""One small run of the new task families on the real bundled model (one run for the module, each
family's test reading its own rows): every item scored, prompts of the asked length, every evidence
piece's span recorded with its role, failure categories counted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.scoring.deterministic import score
from rotscope.tasks import get_task
from rotscope.types import Completion

LENGTH = 400
DEPTH = 0.5
CATEGORIES = {
    "competitive": {"decoy"},
    "latent": {"anchor_only", "superseded"},
    "join": {"filter_ignored", "wrong_entity"},
    "multihop": set(),
}
GENERIC = {"wrong_answer", "context_value", "abstained"}


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


@pytest.fixture(scope="module")
def families_run(bundled_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every family in one run: one engine start for the module instead of one per family."""
    config = build_config(
        {
            "name": "families",
            "model": "bundled",
            "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
            "tasks": sorted(CATEGORIES),
            "limit": 1,
            "lengths": [LENGTH],
            "depths": [DEPTH],
            "controls": True,
            "filler": {"kind": "readinglog"},
            "generation": {"temperature": 0.0, "max_tokens": 16, "seed": 0},
            # one engine thread: spinning threads on a busy machine cost several times the time
            "llamacpp": {"n_threads": 1},
        }
    )
    return run_experiment(config, run_dir=tmp_path_factory.mktemp("families") / "run")


@pytest.mark.parametrize("family", sorted(CATEGORIES))
def test_family_runs_on_the_bundled_model(family: str, families_run: Path) -> None:
    run_dir = families_run
    case = next(iter(get_task(family).cases()))
    rows = [row for row in _rows(run_dir) if row["task"] == family]

    # one probe and its evidence-absent control, nothing rejected by the verifier
    assert sorted(row["control"] for row in rows) == [0, 1]
    assert all(row["status"] == "ok" and row["error"] is None for row in rows), rows
    assert all(row["outcome"] in {"correct", "incorrect", "abstained"} for row in rows)
    for row in rows:
        assert row["task"] == family
        assert abs(row["prompt_tokens"] - LENGTH) <= 0.05 * LENGTH, row["prompt_tokens"]
        assert row["usage_prompt_tokens"] == row["prompt_tokens"]

    probe = next(row for row in rows if not row["control"])
    control = next(row for row in rows if row["control"])
    assert probe["case_id"] == case.case_id
    assert probe["depth"] == DEPTH
    spans = json.loads(probe["spans"])
    roles = {e.evidence_id: e.role for e in case.evidence}
    assert len(spans) == len(case.evidence)
    assert {span["evidence_id"]: span["role"] for span in spans} == roles
    texts = {e.evidence_id: e.text for e in case.evidence}
    for span in spans:
        assert span["text"] == texts[span["evidence_id"]]
        assert 0 <= span["token_start"] < span["token_end"] <= probe["prompt_tokens"]
    assert json.loads(control["spans"]) == []
    assert control["expected"] == "not in the context"
    assert probe["expected"] == case.oracle.answer

    # the stored outcome is what the scorer makes of the stored reply
    for row, oracle in ((probe, case.oracle), (control, case.absent_control().oracle)):
        again = score(oracle, Completion(text=row["response"]))
        assert again.outcome == row["outcome"], row["response"]
        if row["category"] not in ("wrong_answer", "context_value"):
            assert again.category == row["category"], row["response"]
    if probe["outcome"] == "incorrect":
        assert probe["category"] in CATEGORIES[family] | GENERIC

    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["total"] == 2 * len(CATEGORIES)  # this family's two rows above, and each other's
    assert summary["items"]["errors"] == 0
    assert summary["items"]["rejected_prompts"] == 0
    [cell] = [cell for cell in summary["cells"] if cell["task"] == family]
    assert (cell["length"], cell["depth"], cell["n"], cell["errors"]) == (LENGTH, DEPTH, 1, 0)
    categories = cell["categories"]
    assert isinstance(categories, dict)
    assert sum(categories.values()) == cell["incorrect"] + cell["abstained"]
    assert cell["correct"] + cell["incorrect"] + cell["abstained"] == 1
    if probe["category"]:
        assert categories == {probe["category"]: 1}
    else:
        assert probe["outcome"] == "correct" and categories == {}
