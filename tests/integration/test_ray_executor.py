"""The Ray executor on a real local Ray (one session for the module: starting Ray takes seconds).

With fake models: the same rows as in-process, the answers' likelihoods included; a worker process
killed mid-run loses no row and doubles none, its call is an error row and ``--resume`` finishes
every item; workers lost too often stop the run (exit 5) with every finished row kept. On the
bundled model: two llama.cpp workers give the in-process run's items and outcomes, each row once,
within 1.1x of the trie bound.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import EngineStopped, resume_experiment, run_experiment
from rotscope.store import RunStore
from rotscope.types import Completion, GenerateRequest
from tests.support.cli_helpers import invoke

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_session(whole_machine: None) -> Iterator[None]:
    """One local Ray for the module, as ``rotscope run --executor ray`` starts it (asked for after
    the in-process runs, which would otherwise share the cores with Ray's start)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    # The killing fakes below are defined here; Ray's workers cannot import this test module.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


class KillingFake(FakeBackend):
    """``fake/lexical`` whose worker process kills itself on its ``at``-th call, once in the whole
    run (a marker file says it happened); with ``once=False`` every call after that kills too."""

    def __init__(self, marker: Path, at: int, once: bool = True) -> None:
        super().__init__("lexical", lexical_responder())
        self.marker, self.at, self.once = marker, at, once

    async def generate(self, request: GenerateRequest) -> Completion:
        killed = self.marker.exists()
        if (killed and not self.once) or (not killed and self.calls + 1 >= self.at):
            self.marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().generate(request)


class BatchingFake(FakeBackend):
    """``fake/lexical`` as a batching engine (``BatchingBackend``): each chunk it is handed is
    answered call by call, and its size appended to ``sizes`` (a file: the actors are processes)."""

    def __init__(self, sizes: Path, batch_size: int = 4) -> None:
        super().__init__("lexical", lexical_responder())
        self.capabilities = replace(self.capabilities, batching=True)
        self.sizes, self.batch_size = sizes, batch_size

    async def generate_batch(self, requests: Sequence[GenerateRequest]) -> list[Completion]:
        with self.sizes.open("a") as sizes:
            sizes.write(f"{os.getpid()} {len(requests)}\n")
        return [await self.generate(request) for request in requests]


def fake_grid(corpus: Path, **changes: Any) -> ExperimentConfig:
    return build_config(
        {
            "name": "ray-fake",
            "model": "fake/lexical",
            "tasks": ["niah"],
            "limit": 3,
            "lengths": [200, 300],
            "depths": [0.0, 0.5, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "executor": {"kind": "ray", "workers": 2, "max_crashes": 2},
            **changes,
        }
    )


def rows(run_dir: Path) -> list[tuple[str, str, str | None, str | None]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        return sorted(db.execute("SELECT item_id, status, outcome, error FROM items"))


def outcomes(run_dir: Path) -> dict[str, str | None]:
    return {item_id: outcome for item_id, _, outcome, _ in rows(run_dir)}


@pytest.fixture(scope="module")
def fake_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import filler_text

    folder = tmp_path_factory.mktemp("corpus")
    for number in range(3):
        (folder / f"doc{number}.txt").write_text(filler_text(60, seed=number), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def in_process(fake_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = fake_grid(fake_corpus, executor={"kind": "inprocess"})
    return run_experiment(config, run_dir=tmp_path_factory.mktemp("runs") / "in-process")


def test_a_killed_worker_loses_no_row_and_resume_finishes_every_item(
    fake_corpus: Path, in_process: Path, ray_session: None, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_experiment(fake_grid(fake_corpus), run_dir=run_dir, backend=KillingFake(tmp_path / "killed", at=3))
    assert (tmp_path / "killed").exists()
    first = rows(run_dir)
    assert [item_id for item_id, *_ in first] == sorted(outcomes(in_process))  # every item, once
    lost = [row for row in first if row[1] == "error"]
    assert len(lost) == 1 and "ray worker lost" in str(lost[0][3]), lost  # the call in flight only
    assert [status for _, status, _, _ in first].count("ok") == len(first) - 1
    with RunStore.open_existing(run_dir) as store:
        executor = store.meta()["executor"]
    assert executor["lost_workers"] == 1 and len(executor["shards"]) == 2
    resume_experiment(run_dir)
    assert outcomes(run_dir) == outcomes(in_process)
    assert {status for _, status, _, _ in rows(run_dir)} == {"ok"}
    assert load_summary(run_dir).model_dump()["items"]["errors"] == 0


def test_batching_replicas_get_their_shards_in_batches_and_give_the_in_process_outcomes(
    fake_corpus: Path, in_process: Path, ray_session: None, tmp_path: Path
) -> None:
    sizes = tmp_path / "sizes.txt"
    run_dir = tmp_path / "run"
    run_experiment(fake_grid(fake_corpus), run_dir=run_dir, backend=BatchingFake(sizes))
    assert outcomes(run_dir) == outcomes(in_process)
    assert {status for _, status, _, _ in rows(run_dir)} == {"ok"}
    batches = [tuple(map(int, line.split())) for line in sizes.read_text().splitlines()]
    by_actor: dict[int, list[int]] = {}
    for pid, size in batches:
        by_actor.setdefault(pid, []).append(size)
    assert len(by_actor) == 2 and pid != os.getpid()  # both replicas, in their own processes
    assert all(max(chunks) > 1 and max(chunks) <= 4 for chunks in by_actor.values()), by_actor
    assert sum(size for _, size in batches) == len(outcomes(in_process))  # every call once


def likelihoods(run_dir: Path) -> dict[str, float | None]:
    with sqlite3.connect(run_dir / "run.db") as db:
        return dict(db.execute("SELECT item_id, answer_logprob FROM items"))


def test_replicas_read_the_in_process_likelihoods_one_by_one_and_in_batches(
    fake_corpus: Path, in_process: Path, ray_session: None, tmp_path: Path
) -> None:
    expected = likelihoods(in_process)
    assert expected and all(value is not None for value in expected.values())  # a "both" run by default
    run_experiment(fake_grid(fake_corpus), run_dir=tmp_path / "one")
    batching = BatchingFake(tmp_path / "sizes.txt")
    run_experiment(fake_grid(fake_corpus), run_dir=tmp_path / "batched", backend=batching)
    assert likelihoods(tmp_path / "one") == expected
    assert likelihoods(tmp_path / "batched") == expected


def test_workers_lost_in_a_row_stop_the_run_with_finished_rows_kept(
    fake_corpus: Path, in_process: Path, ray_session: None, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    killer = KillingFake(tmp_path / "killed", at=2, once=False)  # no call after the first kill lives
    with pytest.raises(EngineStopped):
        run_experiment(fake_grid(fake_corpus), run_dir=run_dir, backend=killer)
    stopped = rows(run_dir)
    assert len(stopped) == len(outcomes(in_process))
    statuses = [status for _, status, _, _ in stopped]
    # Per worker: at most its first call ok, then max_crashes (2) lost calls, and the run stops.
    assert 1 <= statuses.count("ok") <= 2 and 2 <= statuses.count("error") <= 4, statuses
    assert "pending" in statuses  # left for --resume (shown finishing a run in the test above)


@pytest.mark.integration
def test_two_llamacpp_workers_match_the_in_process_run_within_the_trie_bound(
    bundled_path: Path, fake_corpus: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    grid = {
        "name": "ray-bundled",
        "model": str(bundled_path),
        "tasks": ["niah"],
        "limit": 1,  # 6 calls in 2 prefix groups, one per worker
        "lengths": [256, 384],
        "depths": [0.0, 1.0],
        "filler": {"kind": "text", "glob": str(fake_corpus / "*.txt")},
        "generation": {"max_tokens": 24},
        "llamacpp": {"n_threads": 1},  # one core per worker on this two-core machine
    }
    here = run_experiment(
        build_config({**grid, "executor": {"kind": "inprocess"}}), run_dir=tmp_path / "in-process"
    )
    request.getfixturevalue("ray_session")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(yaml.safe_dump(grid), encoding="utf-8")
    result = invoke("run", experiment, "--executor", "ray", "--out", tmp_path / "ray")
    assert result.exit_code == 0, result.output
    there = tmp_path / "ray"
    assert outcomes(there) == outcomes(here)  # the same item ids, the same outcomes
    assert {status for _, status, _, _ in rows(there)} == {"ok"}
    with RunStore.open_existing(there) as store:
        shards = store.meta()["executor"]["shards"]
    assert len(shards) == 2 and all(part["calls"] > 0 for part in shards)
    tokens = load_summary(there).model_dump()["tokens"]
    assert tokens["lower_bound"] <= tokens["evaluated"] <= 1.1 * tokens["lower_bound"], tokens
