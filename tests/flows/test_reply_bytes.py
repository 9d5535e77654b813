"""Replies are stored whatever their code points: a lone surrogate in an OpenAI-compatible reply
(``"\\ud800"`` in its JSON) is a stored, scored row in run.db and in the response cache, and
``--resume`` completes the run, through a real local HTTP server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from tests.support.chat_server import ChatServer

KEY_ENV = "ROTSCOPE_BYTES_KEY"
LONE_SURROGATE = "\ud800"


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    chat = ChatServer().start()
    yield chat
    chat.stop()


def remote_config(corpus: Path, base_url: str, out: Path, cache: Path, **remote: Any) -> ExperimentConfig:
    return build_config(
        {
            "cache": {"path": str(cache)},
            "name": "reply-bytes",
            "model": "openai/test-model",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [160],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "generation": {"max_tokens": 24},
            "remote": {
                "base_url": base_url,
                "api_key_env": KEY_ENV,
                "timeout_s": 2,
                "backoff_initial_s": 0.01,
                **remote,
            },
            "out": str(out),
        }
    )


def stored(path: Path, query: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(query).fetchall()


def test_a_lone_surrogate_in_a_reply_is_stored_scored_and_resumed(
    server: ChatServer, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    server.reply = lambda text, authorization: f"{text} {LONE_SURROGATE}"
    # Every other prompt the server meets fails once (one attempt each): error rows that --resume
    # must complete (the parity of the prompt's key hash could fail all of a handful of prompts).
    met: list[str] = []

    def every_other(key: str) -> tuple[str, ...]:
        if key not in met:
            met.append(key)
        return ("500",) if met.index(key) % 2 == 0 else ()

    server.script = every_other
    cache = tmp_path / "cache" / "responses.db"
    config = remote_config(corpus, server.base_url, tmp_path / "run", cache, max_attempts=1)

    run_dir = run_experiment(config)
    first = stored(run_dir / "run.db", "SELECT status, response, outcome FROM items")
    assert {status for status, _, _ in first} == {"ok", "error"}
    answered = [row for row in first if row[0] == "ok"]
    assert all(response.endswith(" \ufffd") for _, response, _ in answered)
    assert all(outcome in ("correct", "incorrect", "abstained") for _, _, outcome in answered)

    resume_experiment(run_dir)
    final = stored(run_dir / "run.db", "SELECT status, response, outcome FROM items")
    assert {status for status, _, _ in final} == {"ok"}
    assert all(response.endswith(" \ufffd") for _, response, _ in final)
    cached = stored(cache, "SELECT text FROM responses")
    assert len(cached) == len(server.answered_per_prompt())
    assert all(text.endswith(" \ufffd") for (text,) in cached)

    # A rerun of the same experiment answers every call from the cache, surrogate replaced.
    served = len(server.log)
    again = run_experiment(remote_config(corpus, server.base_url, tmp_path / "again", cache, max_attempts=1))
    assert len(server.log) == served
    assert stored(again / "run.db", "SELECT DISTINCT status, cached_response FROM items") == [("ok", 1)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a\ud800b", "a\ufffdb"),
        ("\udfff", "\ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair left as two code points is the character it encodes
        ("nul\x00kept", "nul\x00kept"),
    ],
)
def test_storable_replaces_only_what_utf8_cannot_encode(text: str, expected: str) -> None:
    from rotscope._util.safe_text import storable

    assert storable(text) == expected
    storable(text).encode("utf-8")
