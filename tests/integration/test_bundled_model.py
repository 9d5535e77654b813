"""The real bundled model (SmolLM2-135M, llama.cpp): a tiny grid end to end, KV reuse, Ctrl-C and resume."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.types import Completion, GenerateRequest

LENGTHS = [200, 300]
DEPTHS = [0.0, 1.0]
ITEMS = 2 * len(LENGTHS) * len(DEPTHS) + 2 * len(LENGTHS)  # probes + evidence-absent controls


def tiny_config(**changes: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "tiny",
        "model": "bundled",
        "score": "accuracy",  # the replies only (test_likelihood_bundled reads likelihoods)
        "tasks": ["niah"],
        "limit": 2,
        "lengths": LENGTHS,
        "depths": DEPTHS,
        "controls": True,
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 24, "seed": 0},
    }
    data.update(changes)
    return build_config(data)


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


class NoCacheBackend(LlamaCppBackend):
    """Clears the engine's KV cache before every prompt, so nothing of the previous one is reused."""

    def _generate(self, request: GenerateRequest) -> Completion:
        self._load().reset()
        return super()._generate(request)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("tiny") / "run"
    assert run_experiment(tiny_config(), run_dir=run_dir) == run_dir
    return run_dir


def test_tiny_grid_on_the_bundled_model(tiny_run: Path) -> None:
    rows = read_rows(tiny_run)
    assert len(rows) == ITEMS
    assert all(row["status"] == "ok" for row in rows), [row["error"] for row in rows]
    assert all(row["error"] is None for row in rows)
    assert all(row["outcome"] in {"correct", "incorrect", "abstained"} for row in rows)
    for row in rows:
        target = row["length_target"]
        assert target in LENGTHS
        assert abs(row["prompt_tokens"] - target) <= 0.05 * target, row
        assert isinstance(row["response"], str) and row["response"].strip(), row
        assert row["usage_completion_tokens"] > 0
        assert row["attempts"] == 1
    assert sum(row["control"] for row in rows) == 2 * len(LENGTHS)

    summary = load_summary(tiny_run).model_dump()
    assert summary["items"]["total"] == ITEMS
    assert summary["items"]["done"] == ITEMS
    assert summary["items"]["errors"] == 0
    cells = [cell for cell in summary["cells"] if cell["task"] == "niah"]
    assert {(cell["length"], cell["depth"]) for cell in cells} == {(n, d) for n in LENGTHS for d in DEPTHS}
    for cell in cells:
        assert cell["n"] == 2 and cell["errors"] == 0
        assert cell["accuracy"] is not None and 0.0 <= cell["accuracy"] <= 1.0
    assert summary["backend"]["backend"] == "llamacpp"


def test_prompt_tokens_sent_are_the_planned_ids(tiny_run: Path) -> None:
    rows = read_rows(tiny_run)
    for row in rows:
        # llama.cpp counted exactly the verified prompt's ids: nothing re-tokenized or added
        assert row["usage_prompt_tokens"] == row["prompt_tokens"], row
    # local prompts run in prefix order and reuse the cache: some prompt tokens were not evaluated
    assert sum(row["cached_tokens"] for row in rows) > 0
    summary = load_summary(tiny_run).model_dump()
    assert summary["tokens"]["evaluated"] + summary["tokens"]["cached"] == sum(
        row["prompt_tokens"] for row in rows
    )


def test_kv_cache_reuse_does_not_change_answers(tiny_run: Path, tmp_path: Path) -> None:
    config = tiny_config()
    fresh = NoCacheBackend(bundled_model_path(), config.section(LlamaCppOptions))
    run_dir = run_experiment(config, run_dir=tmp_path / "nocache", backend=fresh)
    without = read_rows(run_dir)
    with_cache = read_rows(tiny_run)
    assert all(row["cached_tokens"] == 0 for row in without)
    assert sum(row["cached_tokens"] for row in with_cache) > 0
    assert [row["item_id"] for row in without] == [row["item_id"] for row in with_cache]
    assert [(row["item_id"], row["response"]) for row in without] == [
        (row["item_id"], row["response"]) for row in with_cache
    ]


def rotscope_command() -> str:
    script = Path(sys.executable).with_name("rotscope")
    assert script.is_file(), f"console script not found next to {sys.executable}"
    return str(script)


def ok_rows(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM items WHERE status = 'ok'").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_cli_ctrl_c_keeps_results_and_resume_finishes(tmp_path: Path) -> None:
    run_dir = tmp_path / "cli-run"
    command = [
        rotscope_command(), "run", "--task", "niah", "--limit", "2", "--lengths", "300",
        "--depths", "0,1", "--out", str(run_dir),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        database = run_dir / "run.db"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            if database.exists() and ok_rows(database) >= 1:
                break
            time.sleep(0.2)
        assert process.poll() is None, "the run ended before it could be interrupted"
        assert ok_rows(database) >= 1, "no item finished within 90 s"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "--resume" in stderr
    assert str(run_dir) in stderr.replace("\n", "")
    kept = read_rows(run_dir)
    total = 2 * 2  # 2 cases x 2 depths (the built-in quick experiment, its base, runs no controls)
    assert len(kept) == total
    done_before = {row["item_id"] for row in kept if row["status"] == "ok"}
    assert 1 <= len(done_before) < total
    assert {row["status"] for row in kept} <= {"ok", "pending"}

    resumed = subprocess.run(
        [rotscope_command(), "run", "--resume", str(run_dir)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    final = read_rows(run_dir)
    assert len(final) == total
    assert all(row["status"] == "ok" for row in final)
    # each item ran exactly once: finished ones were kept, the one in flight at Ctrl-C was not recorded
    assert all(row["attempts"] == 1 for row in final)
    before = {row["item_id"]: row["response"] for row in kept if row["status"] == "ok"}
    after = {row["item_id"]: row["response"] for row in final}
    assert {key: after[key] for key in before} == before
    assert all(abs(row["prompt_tokens"] - 300) <= 15 for row in final)
