"""``serve/NAME``: token ids sent to vLLM-, SGLang- and llama.cpp-shaped servers (local stubs answering
with the recorded reply shapes, ``tests/support/completions_server.py``): the verified ids are what
each server receives, the kind is detected from ``/v1/models``, cached tokens are stored per row, a
server that counts the prompt otherwise gives error rows naming both counts; replicas get whole
prefix groups, a replica that stops answering loses and doubles nothing, and ``--resume`` completes
a run every replica left. vLLM and SGLang servers read each answer form's likelihood after the prompt
(their prompt log-probabilities); a llama.cpp server reads none, and a run that asks it for one is
refused once its kind is detected, before any call."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rotscope._util.tokens import common_prefix
from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.errors import BackendRefused, BadInput
from rotscope.execution.calls.likelihood import likelihood_request
from rotscope.execution.executors.ray_executor import shard
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.plan.schedule import prefix_groups
from rotscope.plan.workitems import build_plan
from rotscope.store import RunStore
from rotscope.types import WorkItem
from tests.support.completions_server import CompletionsServer, stub_logprob

KINDS = ("vllm", "sglang")
CONCURRENCY = {"vllm": 1, "sglang": 2}


def experiment(bundled: Path, out: Path, urls: str, **serve: Any) -> dict[str, Any]:
    return {
        "name": "serve-stub",
        "model": "serve/smollm2",
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [200, 300],
        "depths": [0.0, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 8, "seed": 7},
        "cache": {"enabled": False},
        "serve": {"tokenizer": str(bundled), "base_url": urls, "timeout_s": 10, **serve},
        "out": str(out),
    }


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items")]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rotscope.backends.llamacpp.backend import bundled_model_path

    return bundled_model_path()


@pytest.fixture(scope="module")
def planned(bundled: Path, tmp_path_factory: pytest.TempPathFactory) -> list[WorkItem]:
    """The grid's work items, planned with the serve backend's own tokenizer."""
    config = build_config(experiment(bundled, tmp_path_factory.mktemp("plan"), "http://127.0.0.1:9"))
    return build_plan(config, create_backend(config)).items


@pytest.fixture(scope="module")
def planned_ids(planned: list[WorkItem]) -> list[tuple[int, ...]]:
    """The verified prompt ids of the grid."""
    return [item.prompt.token_ids for item in planned]


@pytest.fixture(scope="module")
def by_kind(bundled: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run per server kind on two replicas (stubs) of that kind, the kind left to detection;
    SGLang's with ``serve.concurrency: 2``."""
    runs: dict[str, Any] = {}
    for kind in KINDS:
        servers = [CompletionsServer(kind=kind, delay_s=0.05).start() for _ in range(2)]
        out = tmp_path_factory.mktemp(kind)
        try:
            urls = ",".join(server.base_url for server in servers)
            run_experiment(build_config(experiment(bundled, out, urls, concurrency=CONCURRENCY[kind])))
        finally:
            for server in servers:
                server.stop()
        runs[kind] = (servers, rows(out), out)
    yield runs


@pytest.mark.parametrize("kind", KINDS)
def test_each_server_kind_receives_the_verified_ids_and_reports_cached_tokens(
    by_kind: dict[str, Any], planned_ids: list[tuple[int, ...]], kind: str
) -> None:
    servers, stored, out = by_kind[kind]
    assert len(stored) == len(planned_ids)
    assert all(row["status"] == "ok" for row in stored), [row["error"] for row in stored]
    assert sorted(tuple(p) for server in servers for p in server.prompts()) == sorted(planned_ids)
    body = servers[0].requests[0]
    assert body["model"] == "smollm2" and body["max_tokens"] == 8
    assert body["temperature"] == 0.0 and body["seed"] == 7
    expected = set()  # the cached tokens each replica reported, stored on the row
    for server in servers:
        previous: list[int] = []
        for prompt in server.prompts():
            expected.add((len(prompt), common_prefix(previous, prompt[:-1])))
            previous = prompt
    assert {(row["usage_prompt_tokens"], row["cached_tokens"]) for row in stored} == expected
    assert any(row["cached_tokens"] > 0 for row in stored)
    with RunStore.open_existing(out) as store:
        executor = store.meta()["executor"]
    assert executor["kind"] == "replicas" and executor["servers"] == [kind, kind]  # detected


@pytest.mark.parametrize("kind", KINDS)
def test_each_server_kind_reads_every_answer_forms_likelihood_after_the_verified_prompt(
    by_kind: dict[str, Any], planned: list[WorkItem], bundled: Path, tmp_path: Path, kind: str
) -> None:
    servers, stored, out = by_kind[kind]
    config = build_config(experiment(bundled, tmp_path, "http://127.0.0.1:9"))
    tokenizer = create_backend(config).tokenizer()
    read = {
        tuple(body.get("input_ids") or body["prompt"]): body for server in servers for body in server.readings
    }
    by_id = {item.item_id: item for item in planned}
    with RunStore.open_existing(out) as store:
        assert store.meta()["score"] == "both"  # the default where the detected kind reads likelihoods
    for row in stored:
        request = likelihood_request(by_id[row["item_id"]], tokenizer)
        assert request is not None
        sums = []
        for form, lead in zip(request.continuations, request.scored_from, strict=True):
            body = read[(*request.token_ids, *form)]  # each form its own prompt after the verified one
            if kind == "sglang":
                assert (
                    body["return_logprob"] is True and body["logprob_start_len"] == len(request.token_ids) - 1
                )
            else:
                assert body["prompt_logprobs"] == 0 and body["max_tokens"] == 1
            sums.append(sum(stub_logprob(token) for token in form[lead:]))
        assert row["answer_logprob"] == pytest.approx(max(sums))


def test_a_llama_server_reads_no_likelihood_and_a_run_asking_for_one_is_refused_before_any_call(
    bundled: Path, tmp_path: Path
) -> None:
    server = CompletionsServer(kind="llamacpp").start()
    try:
        asked = build_config(
            {**experiment(bundled, tmp_path / "asked", server.base_url), "score": "likelihood"}
        )
        with pytest.raises(BadInput, match=r"--score likelihood: the serve backend .*llama-server returns"):
            run_experiment(asked)
        assert server.requests == [] and server.readings == []
        run_experiment(build_config(experiment(bundled, tmp_path / "default", server.base_url)))
    finally:
        server.stop()
    assert server.requests and server.readings == []
    with RunStore.open_existing(tmp_path / "default") as store:
        assert store.meta()["score"] == "accuracy"  # the replies alone, as the detected kind allows
    assert all(row["answer_logprob"] is None for row in rows(tmp_path / "default"))


@pytest.mark.parametrize("kind", KINDS)
def test_each_replica_has_the_configured_calls_in_flight(by_kind: dict[str, Any], kind: str) -> None:
    assert [server.max_in_flight for server in by_kind[kind][0]] == [CONCURRENCY[kind]] * 2


@pytest.mark.parametrize("kind", KINDS)
def test_each_prefix_group_goes_to_one_replica(
    by_kind: dict[str, Any], planned_ids: list[tuple[int, ...]], kind: str
) -> None:
    servers = by_kind[kind][0]
    where = {tuple(p): number for number, server in enumerate(servers) for p in server.prompts()}
    groups = prefix_groups(planned_ids)
    assert len(groups) > 1 and all(server.prompts() for server in servers)
    for group in groups:
        assert len({where[planned_ids[i]] for i in group}) == 1


def test_a_server_that_counts_the_prompt_otherwise_gives_error_rows_naming_both_counts(
    bundled: Path, tmp_path: Path, planned_ids: list[tuple[int, ...]]
) -> None:
    server = CompletionsServer(kind="sglang", skew=3).start()
    try:
        run_experiment(build_config(experiment(bundled, tmp_path / "run", server.base_url)))
    finally:
        server.stop()
    stored = rows(tmp_path / "run")
    assert len(stored) == len(planned_ids)
    assert all(row["status"] == "error" and row["outcome"] == "error" for row in stored)
    lengths = {len(ids) for ids in planned_ids}
    for row in stored:
        assert any(f"{n + 3} prompt tokens, {n} token ids were sent" in row["error"] for n in lengths)


def test_a_lost_replica_doubles_nothing_and_resume_completes_what_every_replica_left(
    bundled: Path, tmp_path: Path, planned: list[WorkItem], planned_ids: list[tuple[int, ...]]
) -> None:
    """llama.cpp-shaped replicas: the first stops answering after one call, its calls go to the
    second, which stops two calls after its own; the run stops (no server answers) and ``--resume`` against
    the servers back on their ports sends only the calls left."""
    second_shard = len(shard(planned, 2)[1].items)
    servers = [CompletionsServer(kind="llamacpp", die_after=n).start() for n in (1, second_shard + 2)]
    urls = ",".join(server.base_url for server in servers)
    out = tmp_path / "run"
    with pytest.raises(BackendRefused, match="no server answers"):
        run_experiment(build_config(experiment(bundled, out, urls)))
    for server in servers:
        server.stop()
    body = servers[0].requests[0]
    assert body["cache_prompt"] is True and body["n_predict"] == 8 and "model" not in body
    with RunStore.open_existing(out) as store:
        passes = store.meta()["executor"]["passes"]
    assert [shard["down"] for shard in passes[0]["shards"]] == [True, False]
    assert [shard["replica"] for shard in passes[1]["shards"]] == [servers[1].base_url]
    before = rows(out)
    done = {row["call_id"] for row in before if row["status"] == "ok"}
    assert len(done) == 1 + second_shard + 2  # each replica's answered calls, recorded once
    revived = [CompletionsServer(kind="llamacpp", port=server.port).start() for server in servers]
    try:
        resume_experiment(out)
    finally:
        for server in revived:
            server.stop()
    stored = rows(out)
    assert len(stored) == len(planned_ids) and all(row["status"] == "ok" for row in stored)
    answered = [tuple(p) for server in [*servers, *revived] for p in server.prompts()]
    assert sorted(answered) == sorted(planned_ids)  # every prompt answered exactly once


def test_two_replicas_one_failing_every_call_after_its_fifth_answer_every_row_on_the_first_pass(
    bundled: Path, tmp_path: Path
) -> None:
    """Issue 52's acceptance: >= 95% of rows ok on the first pass (every one, here: each call that
    failed was sent again to the healthy replica), and the failing replica's calls, failures and
    removal from the pool counted in the run's summary."""
    from rotscope.analysis.summary import load_summary
    from rotscope.report.terminal import replicas_line

    healthy = CompletionsServer(kind="vllm").start()
    failing = CompletionsServer(kind="vllm", fault="500", fault_after=5).start()
    out = tmp_path / "run"
    try:
        urls = f"{healthy.base_url},{failing.base_url}"
        grid = {"limit": 3, "depths": [0.0, 0.5, 1.0], "score": "accuracy"}  # 24 calls
        run_experiment(build_config({**experiment(bundled, out, urls, max_attempts=1), **grid}))
    finally:
        healthy.stop()
        failing.stop()
    stored = rows(out)
    assert len(stored) == 24
    assert sum(row["status"] == "ok" for row in stored) >= 0.95 * len(stored)
    assert all(row["status"] == "ok" for row in stored), [row["error"] for row in stored]
    lines = {line.replica: line for line in load_summary(out).execution.replicas or []}
    sick = lines[failing.base_url]
    assert sick.calls == 5 + len(failing.faulted) and sick.failures == len(failing.faulted) == 3
    assert sick.taken_out == 1 and sick.at_call == 8 and "HTTP 500" in (sick.reason or "")
    assert lines[healthy.base_url].failures == 0
    assert f"{failing.base_url} 8 calls, 3 failed, taken out of the pool once" in replicas_line(
        list(lines.values())
    )
