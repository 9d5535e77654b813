"""The openai backend against real local servers: llama.cpp's OpenAI-compatible server running the
bundled model gives the same answers as the in-process backend; a kill -9 mid-run followed by
--resume ends with every item done exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.store import RunStore
from tests.llama_server import SERVED_NAME, served
from tests.support.chat_server import ChatServer, prompt_key


@pytest.fixture(scope="module")
def llama_server(bundled_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the bundled GGUF on 127.0.0.1 (``tests/llama_server.py``);
    yields its base URL."""
    with served(bundled_path, tmp_path_factory.mktemp("llama-server") / "server.log") as base_url:
        yield base_url


def experiment(model: str, out: Path, **changes: Any) -> dict[str, Any]:
    return {
        "name": "server-vs-inprocess",
        "model": model,
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [300],  # six prompts (two cases at two depths, two controls) on each side
        "depths": [0.0, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 24, "seed": 0},
        "cache": {"enabled": False},
        "out": str(out),
        **changes,
    }


def by_cell(run_dir: Path) -> dict[tuple[str, int, float], dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return {
            (r["case_id"], r["length_target"], r["depth"]): dict(r) for r in db.execute("SELECT * FROM items")
        }


def test_server_and_in_process_give_the_same_scores(
    llama_server: str, bundled_path: Path, tmp_path: Path
) -> None:
    """Same prompts, same greedy decoding, same replies. The server's chat endpoint applies a
    repeat penalty of 1.1 unless told otherwise (the in-process engine: none), which changes replies
    late in a line, so the served run passes ``repeat_penalty: 1.0`` through ``remote.params``."""
    local = run_experiment(build_config(experiment("bundled", tmp_path / "local")))
    remote_options = {
        "base_url": llama_server,
        "tokenizer": str(bundled_path),
        "timeout_s": 600,
        "params": {"repeat_penalty": 1.0},
    }
    served = run_experiment(
        build_config(experiment(f"openai/{SERVED_NAME}", tmp_path / "served", remote=remote_options))
    )
    local_rows, served_rows = by_cell(local), by_cell(served)
    assert len(served_rows) == 6 and served_rows.keys() == local_rows.keys()
    assert all(row["status"] == "ok" for row in served_rows.values())
    for cell, row in served_rows.items():
        # Same tokenizer and template: the server renders and tokenizes the messages to the same ids.
        assert row["prompt_tokens"] == local_rows[cell]["prompt_tokens"]
        assert row["usage_prompt_tokens"] == row["prompt_tokens"]
        assert row["response"].strip() == local_rows[cell]["response"].strip(), cell
        assert row["outcome"] == local_rows[cell]["outcome"], cell
    summary = load_summary(served).model_dump()
    assert summary["token_counts"]["method"] == "exact"
    assert summary["token_counts"]["overhead"]["median"] == 0
    assert [cell["accuracy"] for cell in summary["cells"]] == [
        cell["accuracy"] for cell in load_summary(local).model_dump()["cells"]
    ]


def rotscope(*arguments: str) -> list[str]:
    return [sys.executable, "-c", "from rotscope.cli import main; main()", *arguments]


def ok_rows(database: Path) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT COUNT(*) FROM items WHERE status = 'ok'").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_kill_9_then_resume_does_every_item_exactly_once(tmp_path: Path) -> None:
    server = ChatServer(delay_s=0.4).start()
    config = tmp_path / "experiment.yaml"
    config.write_text(
        "tasks: [niah]\nlimit: 3\nlengths: [200]\ndepths: [0.0, 0.5, 1.0]\n"
        "filler: {kind: code, package: json}\nremote: {timeout_s: 10}\ncache: {enabled: false}\n"
    )
    run_dir = tmp_path / "run"
    environment = {**os.environ, "ROTSCOPE_KILL_KEY": "sk-unused"}
    try:
        process = subprocess.Popen(
            rotscope("run", str(config), "--model", "openai/m", "--base-url", server.base_url,
                     "--api-key-env", "ROTSCOPE_KILL_KEY", "--out", str(run_dir)),
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and process.poll() is None and ok_rows(run_dir / "run.db") < 3:
                time.sleep(0.05)
            assert process.poll() is None, "the run ended before it could be killed"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        finally:
            if process.poll() is None:
                process.kill()
        before = by_cell(run_dir)
        done_before = sum(row["status"] == "ok" for row in before.values())
        assert 3 <= done_before < len(before) == 12
        resumed = subprocess.run(
            rotscope("run", "--resume", str(run_dir)),
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
    finally:
        server.stop()
    final = by_cell(run_dir)
    assert {row["status"] for row in final.values()} == {"ok"}
    assert {row["attempts"] for row in final.values()} == {1}  # each row recorded once
    answered = server.answered_per_prompt()
    store = RunStore.open_existing(run_dir)
    try:
        key_of = {
            cell: prompt_key(store.prompt_messages(row["prompt_digest"])) for cell, row in final.items()
        }
    finally:
        store.close()
    assert set(answered) == set(key_of.values()) and len(answered) == len(final)
    # Only requests in flight at the kill (answered, never recorded) may have been sent twice.
    in_flight = {key_of[cell] for cell, row in before.items() if row["status"] != "ok"}
    assert all(count == 1 or key in in_flight for key, count in answered.items())
    assert sum(answered.values()) - len(answered) <= 1 + 8  # at most the run's concurrency
    for cell, row in final.items():
        if before[cell]["status"] == "ok":
            assert row["finished_at"] == before[cell]["finished_at"], cell
