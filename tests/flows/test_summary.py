"""The summary of a run built by the runner with fake backends: cell counts worked out by hand,
intervals on independent instances, errors kept out of accuracy and retried on resume."""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.stats.intervals import mean_interval, wilson
from rotscope.store import RunStore
from rotscope.types import GenerateRequest

SYLLABLES = ("zu", "qa", "xo", "vy", "ku", "pim", "dax", "fol", "wex", "jor", "ibb", "oth")
LEXICAL = lexical_responder()


def _nonsense_corpus(folder: Path) -> Path:
    """Invented words only, so the string matcher never mistakes a filler line for an answer."""
    rng = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(3):
        lines = (" ".join(rng.choice(SYLLABLES) + rng.choice(SYLLABLES) for _ in range(8)) for _ in range(40))
        (folder / f"doc{number}.txt").write_text(".\n".join(lines) + ".\n", encoding="utf-8")
    return folder


def _config(tmp_path: Path, **fields: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "summary",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": [0.0, 1.0],
        "limit": 2,
        "filler": {"kind": "text", "glob": str(_nonsense_corpus(tmp_path / "corpus") / "*.txt")},
    }
    data.update(fields)
    return build_config(data)


def _interval(*means: float) -> tuple[float, float]:
    """A cell's interval on these instance means (each case its own haystack variant here)."""
    return mean_interval({f"case{i}": mean for i, mean in enumerate(means)})


def _cells(summary: dict[str, Any]) -> dict[tuple[str, int, float], dict[str, Any]]:
    return {(cell["task"], cell["length"], cell["depth"]): cell for cell in summary["cells"]}


def test_two_families_counts_by_hand(tmp_path: Path) -> None:
    config = _config(tmp_path, tasks=["niah", "nolima"], lengths=[200, 300])
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    summary = load_summary(run_dir).model_dump()

    # 2 tasks x 2 lengths x 2 depths = 8 cells of 2 cases each; 8 controls (4 cases x 2 lengths).
    cells = _cells(summary)
    assert set(cells) == {(t, n, d) for t in ("niah", "nolima") for n in (200, 300) for d in (0.0, 1.0)}
    for (task, _, _), cell in cells.items():
        assert (cell["n"], cell["instances"], cell["errors"]) == (2, 2, 0)
        if task == "niah":  # the needle repeats the question's words: the matcher finds it
            assert (cell["correct"], cell["incorrect"], cell["abstained"]) == (2, 0, 0)
            assert cell["accuracy"] == 1.0
            assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(_interval(1.0, 1.0))
        else:  # no shared content word: the matcher abstains
            assert (cell["correct"], cell["incorrect"], cell["abstained"]) == (0, 0, 2)
            assert cell["accuracy"] == 0.0
            assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(_interval(0.0, 0.0))

    items = summary["items"]
    assert (items["total"], items["done"], items["errors"], items["rejected_prompts"]) == (24, 24, 0, 0)
    assert len(summary["controls"]) == 4
    assert all(c["n"] == 2 and c["correct"] == 2 and c["hallucinated"] == 0 for c in summary["controls"])

    # Per length: 2 of 4 instances right (niah yes, nolima no) in each of 2 depths -> 0.5.
    assert [(row["length"], row["n"], row["accuracy"]) for row in summary["lengths"]] == [
        (200, 8, 0.5),
        (300, 8, 0.5),
    ]
    # Base = mean at lengths <= 1K = 0.5, threshold 0.425: both lengths pass.
    effective = summary["effective_length"]
    assert (effective["definition"], effective["value"]) == ("nolima-0.85", 300)
    assert effective["base_score"] == pytest.approx(0.5)

    # The fake engine caches nothing, so every prompt token is evaluated: exactly the naive sum.
    tokens = summary["tokens"]
    assert tokens["cached"] == 0
    assert tokens["evaluated"] == tokens["naive_prefill"] > 0
    assert 0 < tokens["lower_bound"] <= tokens["naive_prefill"]

    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)


def test_trials_are_items_not_instances(tmp_path: Path) -> None:
    config = _config(tmp_path, trials=3, controls=False)
    summary = load_summary(run_experiment(config, run_dir=tmp_path / "run")).model_dump()
    cells = summary["cells"]
    assert len(cells) == 2  # 1 task x 1 length x 2 depths
    for cell in cells:
        # 2 cases x 3 trials = 6 items, but only 2 independent instances.
        assert (cell["n"], cell["instances"], cell["correct"]) == (6, 2, 6)
        assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(_interval(1.0, 1.0))
        # ... which is wider than pretending the 6 items were independent.
        assert cell["ci_low"] < wilson(6, 6)[0]


def _by_trial(request: GenerateRequest) -> str:
    """Trial 0 (seed 0): the string matcher's answer; trial 1: abstain; trial 2: engine failure."""
    if request.params.seed == 0:
        return LEXICAL(request)
    if request.params.seed == 1:
        return "I don't know."
    raise RuntimeError("engine fell over")


def test_fractional_instance_scores_and_errors(tmp_path: Path) -> None:
    config = _config(tmp_path, trials=3, controls=False)
    backend = FakeBackend("lexical", _by_trial)
    run_dir = run_experiment(config, run_dir=tmp_path / "run", backend=backend)
    assert backend.calls == 2 * 2 * 3
    summary = load_summary(run_dir).model_dump()
    for cell in summary["cells"]:
        assert (cell["n"], cell["instances"]) == (6, 2)
        assert (cell["correct"], cell["abstained"], cell["incorrect"], cell["errors"]) == (2, 2, 0, 2)
        # accuracy = correct / (n - errors) = 2 / 4: errors are never counted as wrong.
        assert cell["accuracy"] == pytest.approx(0.5)
        # Each instance scores 1/2 over its 2 scored items -> k = 1.0 of 2 instances.
        assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(_interval(0.5, 0.5))
        assert (cell["ci_low"], cell["ci_high"]) != pytest.approx(wilson(2, 4))
    assert summary["items"]["total"] == 12
    assert summary["items"]["done"] == 8
    assert summary["items"]["errors"] == 4

    store = RunStore.open_existing(run_dir)
    try:
        errors = [row for row in store.rows() if row["status"] == "error"]
        assert len(errors) == 4
        assert all(row["trial"] == 2 and row["outcome"] == "error" for row in errors)
        assert all("engine fell over" in row["error"] for row in errors)
        assert store.unfinished() == {row["item_id"] for row in errors}
    finally:
        store.close()

    # --resume re-plans from config.yaml with fake/lexical (same model identity) and retries
    # only the 4 error rows; the string matcher gets them right.
    resume_experiment(run_dir)
    resumed = load_summary(run_dir).model_dump()
    items = resumed["items"]
    assert (items["total"], items["done"], items["errors"]) == (12, 12, 0)
    for cell in resumed["cells"]:
        assert (cell["correct"], cell["abstained"], cell["errors"]) == (4, 2, 0)
        assert cell["accuracy"] == pytest.approx(4 / 6)
        # Each instance: 2 of 3 items right -> k = 2 x 2/3 over 2 instances.
        assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(_interval(2 / 3, 2 / 3))


def test_all_errors_give_no_accuracy(tmp_path: Path) -> None:
    def broken(request: GenerateRequest) -> str:
        raise RuntimeError("no engine")

    config = _config(tmp_path, depths=[0.5], controls=False)
    summary = load_summary(
        run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("x", broken))
    ).model_dump()
    (cell,) = summary["cells"]
    assert (cell["n"], cell["errors"], cell["correct"]) == (2, 2, 0)
    assert cell["accuracy"] is None
    assert cell["ci_low"] is None and cell["ci_high"] is None
    assert summary["effective_length"]["value"] is None


def test_summary_of_a_folder_without_a_run(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"no run\.db"):
        load_summary(tmp_path).model_dump()
