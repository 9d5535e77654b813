"""The openai backend against a local server that injects faults: nothing is scored wrong because
of a fault, every fault is retried, exhausted items are error rows that --resume completes, and
auth or model-not-found failures stop the run with one line that never shows the key."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rotscope.analysis.summary import load_summary
from rotscope.backends.openai_compat import OpenAICompatBackend, parse_chat_completion
from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Permanent
from rotscope.cli import app
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.errors import BackendRefused
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.report.html import render_report
from rotscope.types import GenerateRequest, GenerationParams
from tests.support.chat_server import TEMPLATE_OVERHEAD, ChatServer

KEY_ENV = "ROTSCOPE_TEST_KEY"
PLANTED_KEY = "sk-planted-SECRET-123"
ALL_FAULTS = ("429", "500", "timeout", "malformed", "drop")


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    chat = ChatServer(retry_after="0.3", hang_s=0.6).start()
    yield chat
    chat.stop()


def remote_config(
    corpus: Path, base_url: str, out: Path, concurrency: int = 4, **remote: Any
) -> ExperimentConfig:
    """Every request reaches the server (no response cache), ``concurrency`` calls at a time."""
    return build_config(
        {
            "cache": {"enabled": False},
            "limits": {"openai": {"concurrency": concurrency}},
            "name": "remote-faults",
            "model": "openai/test-model",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [160, 240],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "generation": {"max_tokens": 24},
            "remote": {
                "base_url": base_url,
                "api_key_env": KEY_ENV,
                "timeout_s": 0.3,
                "backoff_initial_s": 0.01,
                "backoff_max_s": 1.0,
                **remote,
            },
            "out": str(out),
        }
    )


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY case_id, length_target, depth")]


def outcomes(run_dir: Path) -> dict[tuple[str, int, float], str]:
    return {(r["case_id"], r["length_target"], r["depth"]): r["outcome"] for r in rows(run_dir)}


@pytest.fixture()
def clean_outcomes(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[Any, str]:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    clean = ChatServer().start()
    try:
        run_dir = run_experiment(remote_config(corpus, clean.base_url, tmp_path / "clean"))
    finally:
        clean.stop()
    return outcomes(run_dir)


def test_every_fault_is_retried_and_nothing_is_scored_wrong(
    server: ChatServer,
    corpus: Path,
    tmp_path: Path,
    clean_outcomes: dict[Any, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    server.script = lambda key: ALL_FAULTS
    run_dir = run_experiment(remote_config(corpus, server.base_url, tmp_path / "faulty", max_attempts=6))
    stored = rows(run_dir)
    assert {row["status"] for row in stored} == {"ok"}
    assert {row["request_attempts"] for row in stored} == {len(ALL_FAULTS) + 1}
    assert outcomes(run_dir) == clean_outcomes
    assert "correct" in clean_outcomes.values()
    assert set(server.requests_per_prompt().values()) == {len(ALL_FAULTS) + 1}
    assert set(server.answered_per_prompt().values()) == {1}
    for key in server.requests_per_prompt():
        times = [entry.at for entry in server.log if entry.key == key]
        rate_limited = ALL_FAULTS.index("429")
        assert times[rate_limited + 1] - times[rate_limited] >= 0.3  # Retry-After honoured
    assert load_summary(run_dir).model_dump()["items"]["errors"] == 0


def test_exhausted_items_are_error_rows_and_resume_completes_them(
    server: ChatServer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)

    def script(key: str) -> tuple[str, ...]:
        return ("500",) * 5 if int(key, 16) % 2 else ("500",)

    server.script = script
    config = remote_config(corpus, server.base_url, tmp_path / "run", max_attempts=3)
    run_dir = run_experiment(config)
    first = rows(run_dir)
    stubborn = {key for key in server.requests_per_prompt() if int(key, 16) % 2}
    errors = [row for row in first if row["status"] == "error"]
    assert stubborn and len(errors) == len(stubborn)
    assert all(row["outcome"] == "error" and "HTTP 500" in row["error"] for row in errors)
    assert all("after 3 attempts" in row["error"] for row in errors)
    summary = load_summary(run_dir).model_dump()
    assert summary["items"]["errors"] == len(stubborn)
    assert sum(cell["errors"] for cell in summary["cells"]) + sum(
        c["errors"] for c in summary["controls"]
    ) == (len(stubborn))

    resume_experiment(run_dir)
    final = rows(run_dir)
    assert {row["status"] for row in final} == {"ok"}
    assert set(server.answered_per_prompt().values()) == {1}
    assert {server.requests_per_prompt()[key] for key in stubborn} == {6}
    assert {row["attempts"] for row in final if row["status"] == "ok"} <= {1, 2}


def test_a_bad_request_is_an_error_row_at_once(
    server: ChatServer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    server.script = lambda key: ("400",)
    run_dir = run_experiment(remote_config(corpus, server.base_url, tmp_path / "run"))
    stored = rows(run_dir)
    assert {row["status"] for row in stored} == {"error"}
    assert {row["request_attempts"] for row in stored} == {1}
    assert set(server.requests_per_prompt().values()) == {1}


@pytest.mark.parametrize(("refusal", "message"), [("401", "refused the API key"), ("404", "not found")])
def test_refusal_stops_the_run_keeping_finished_rows(
    server: ChatServer,
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refusal: str,
    message: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    server.refuse_after, server.refusal = 3, refusal
    with pytest.raises(BackendRefused, match=message) as stopped:
        run_experiment(remote_config(corpus, server.base_url, tmp_path / "run", concurrency=1))
    assert PLANTED_KEY not in str(stopped.value)
    stored = rows(tmp_path / "run")
    assert sum(row["status"] == "ok" for row in stored) == 3
    assert {row["status"] for row in stored} == {"ok", "pending"}
    assert max(server.requests_per_prompt().values()) == 1  # a refusal is never retried


def test_unset_key_variable_is_one_line_exit_2(
    server: ChatServer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = tmp_path / "experiment.yaml"
    config.write_text(
        f"tasks: [niah]\nlimit: 1\nlengths: [160]\nfiller: {{kind: text, glob: '{corpus}/*.txt'}}\n"
    )
    result = CliRunner().invoke(
        app,
        ["run", str(config), "--model", "openai/m", "--base-url", server.base_url, "--api-key-env", KEY_ENV,
         "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert f"environment variable {KEY_ENV} is not set" in result.output
    assert server.log == []


def test_overhead_is_provider_count_minus_local_count(
    server: ChatServer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    run_dir = run_experiment(remote_config(corpus, server.base_url, tmp_path / "run"))
    summary = load_summary(run_dir).model_dump()
    overhead = summary["token_counts"]
    assert overhead["method"] == "approximate"
    assert overhead["overhead"] == {
        "model": "openai/test-model",
        "calls": len(rows(run_dir)),
        "median": TEMPLATE_OVERHEAD,
        "min": TEMPLATE_OVERHEAD,
        "max": TEMPLATE_OVERHEAD,
    }
    assert all(
        row["usage_prompt_tokens"] == row["prompt_tokens"] + TEMPLATE_OVERHEAD for row in rows(run_dir)
    )
    shown = CliRunner().invoke(app, ["show", str(run_dir)])
    assert "token counts: APPROXIMATE" in shown.output
    assert f"median {TEMPLATE_OVERHEAD} tokens" in shown.output
    report = render_report(run_dir)
    assert "Lengths are approximate" in report and f"median {TEMPLATE_OVERHEAD} tokens" in report


def test_request_body_carries_reasoning_options_and_drops_null_params() -> None:
    options = RemoteOptions(
        max_tokens_field="max_completion_tokens",
        reasoning_effort="low",
        params={"temperature": None, "top_p": 0.5},
    )
    backend = OpenAICompatBackend("o-model", options)
    request = GenerateRequest(
        ({"role": "user", "content": "hi"},), (), GenerationParams(max_tokens=9, seed=4)
    )
    assert backend.request_body(request) == {
        "model": "o-model",
        "messages": [{"role": "user", "content": "hi"}],
        "seed": 4,
        "max_completion_tokens": 9,
        "reasoning_effort": "low",
        "top_p": 0.5,
    }


def test_an_unreachable_server_stops_the_run(corpus: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with pytest.raises(BackendRefused, match=r"remote\.base_url: cannot reach .*is the server running"):
        run_experiment(remote_config(corpus, closed, tmp_path / "run", max_attempts=2, api_key_env=None))
    assert {row["status"] for row in rows(tmp_path / "run")} == {"pending"}


def test_a_server_lost_mid_run_gives_error_rows(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    server = ChatServer().start()
    server.refuse_after, server.refusal = 2, "shutdown"
    config = remote_config(corpus, server.base_url, tmp_path / "run", concurrency=1, max_attempts=2)
    run_dir = run_experiment(config)
    stored = rows(run_dir)
    assert sum(row["status"] == "ok" for row in stored) == 2
    failed = [row for row in stored if row["status"] == "error"]
    assert len(failed) == len(stored) - 2
    assert any("connection failed (ConnectError)" in row["error"] for row in failed)


@pytest.mark.parametrize(
    ("finish_reason", "error"),
    [
        ("content_filter", "empty reply, stopped by the provider (content_filter)"),
        ("length", "empty reply, stopped by the provider (length)"),
        ("stop", None),
    ],
)
def test_an_empty_reply_the_provider_cut_short_is_an_error(finish_reason: str, error: str | None) -> None:
    """A filtered reply, or a reasoning model that spent max_tokens before any text, says nothing
    about context use: it must not be scored as an abstention. An empty reply that simply ended is
    the model's answer."""
    body = json.dumps(
        {
            "choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 0},
        }
    ).encode()
    if error is None:
        assert parse_chat_completion(body).text == ""
    else:
        with pytest.raises(Permanent, match=re.escape(error)):
            parse_chat_completion(body)


@pytest.mark.parametrize(
    ("reported", "delivered"),
    [(lambda n: 7, False), (lambda n: int(n * 0.78), True)],
    ids=["cut-to-7-tokens", "real-count-at-0.78"],
)
def test_a_truncated_delivery_under_the_approximate_count_is_an_error_row(
    server: ChatServer,
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reported: Any,
    delivered: bool,
) -> None:
    """A gateway that kept 7 tokens of each prompt is a fault, not the model's answer: every row is
    an error (never scored), while a real tokenizer's count at 0.78 of the estimate is delivered."""
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    server.report_prompt_tokens = reported
    run_dir = run_experiment(remote_config(corpus, server.base_url, tmp_path / "run"))
    stored = rows(run_dir)
    assert stored and load_summary(run_dir).model_dump()["token_counts"]["method"] == "approximate"
    if delivered:
        assert {row["status"] for row in stored} == {"ok"}
        assert "correct" in {row["outcome"] for row in stored}
        return
    assert {row["status"] for row in stored} == {"error"}
    assert {row["outcome"] for row in stored} == {"error"}
    assert all("prompt truncated: the backend reports 7 prompt tokens" in row["error"] for row in stored)
