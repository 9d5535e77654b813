"""``serve/NAME`` against two real ``llama-server`` replicas on the bundled GGUF (built from the
llama.cpp sources in llama-cpp-python's source distribution, ``tests/support/llama_servers.py``):
the same prompt ids and outcomes as the in-process llama.cpp engine, the servers' evaluated prompt
tokens near the trie's lower bound with prefix-group affinity, and a replica killed mid-run losing
and doubling nothing."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.plan.schedule import prefill_bounds
from rotscope.plan.workitems import build_plan
from rotscope.store import RunStore
from tests.support.llama_servers import BATCH, SERVED_NAME, Served, llama_servers

Cell = tuple[str, int, float]


def experiment(model: str, out: Path, **changes: Any) -> dict[str, Any]:
    return {
        "name": "serve-replicas",
        "model": model,
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 12, "seed": 0},
        "cache": {"enabled": False},
        "out": str(out),
        **changes,
    }


def served(bundled: Path, out: Path, urls: str, **changes: Any) -> dict[str, Any]:
    return experiment(
        f"serve/{SERVED_NAME}", out, serve={"tokenizer": str(bundled), "base_url": urls}, **changes
    )


SHARED = {"lengths": [300]}
"""The module's shared runs: six calls (two cases, each a prefix group, at two depths, and two
controls), enough for the two replicas to each take a group and reuse its prefix."""


def by_cell(run_dir: Path) -> dict[Cell, dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return {
            (r["case_id"], r["length_target"], r["depth"]): dict(r) for r in db.execute("SELECT * FROM items")
        }


def plan_ids(config: dict[str, Any]) -> dict[Cell, tuple[int, ...]]:
    built = build_config(config)
    return {
        (item.case.case_id, item.layout.length_tokens, item.layout.depth): item.prompt.token_ids
        for item in build_plan(built, create_backend(built)).items
    }


@pytest.fixture(scope="module")
def replicas(bundled_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Served]]:
    with llama_servers(bundled_path, 3, tmp_path_factory.mktemp("logs")) as started:
        yield started


@pytest.fixture(scope="module")
def runs(
    bundled_path: Path, replicas: list[Served], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    local = experiment(
        "bundled",
        root / "local",
        llamacpp={"n_batch": BATCH, "n_threads": 1, "extra_buffers": "off"},
        **SHARED,
    )
    urls = f"{replicas[0].url},{replicas[1].url}"
    return {
        "local": run_experiment(build_config(local)),
        "served": run_experiment(build_config(served(bundled_path, root / "served", urls, **SHARED))),
    }


def test_the_servers_get_the_in_process_prompt_ids(
    bundled_path: Path, tmp_path: Path, replicas: list[Served]
) -> None:
    local = plan_ids(experiment("bundled", tmp_path / "a"))
    remote = plan_ids(served(bundled_path, tmp_path / "b", replicas[0].url))
    assert local.keys() == remote.keys() and len(local) == 12
    assert local == remote


def test_two_replicas_give_the_in_process_outcomes(runs: dict[str, Path]) -> None:
    local, remote = by_cell(runs["local"]), by_cell(runs["served"])
    assert local.keys() == remote.keys()
    assert all(row["status"] == "ok" for row in remote.values()), [r["error"] for r in remote.values()]
    for cell, row in remote.items():
        assert row["usage_prompt_tokens"] == local[cell]["prompt_tokens"] == row["prompt_tokens"]
        assert (row["outcome"], row["response"]) == (local[cell]["outcome"], local[cell]["response"]), cell


def test_the_replicas_evaluate_near_the_trie_lower_bound(runs: dict[str, Path], bundled_path: Path) -> None:
    rows = list(by_cell(runs["served"]).values())
    evaluated = sum(row["usage_prompt_tokens"] - row["cached_tokens"] for row in rows)
    plan = served(bundled_path, runs["served"].parent / "plan", "http://127.0.0.1:9", **SHARED)
    ids = list(plan_ids(plan).values())
    assert len(ids) == len(rows) == 6
    naive, lower = prefill_bounds(ids)
    assert any(row["cached_tokens"] > 0 for row in rows)
    assert lower <= evaluated <= 1.1 * lower < naive


def test_a_replica_killed_mid_run_loses_and_doubles_nothing(
    bundled_path: Path, replicas: list[Served], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    config = build_config(served(bundled_path, out, f"{replicas[0].url},{replicas[2].url}"))

    def kill_after_two_rows() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(out / "run.db") as db:
                    if db.execute("SELECT count(*) FROM items WHERE status = 'ok'").fetchone()[0] >= 2:
                        replicas[2].kill()
                        return
            except sqlite3.Error:
                pass
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_two_rows, daemon=True)
    killer.start()
    run_experiment(config)
    killer.join(timeout=5)
    assert replicas[2].process.poll() is not None  # it was killed while the run went on
    with RunStore.open_existing(out) as store:
        passes = store.meta()["executor"]["passes"]
    assert [shard["down"] for shard in passes[0]["shards"]] == [False, True]
    assert [shard["replica"] for shard in passes[1]["shards"]] == [replicas[0].url]
    resume_experiment(out)
    rows = by_cell(out)
    assert len(rows) == 12 and all(row["status"] == "ok" for row in rows.values())
