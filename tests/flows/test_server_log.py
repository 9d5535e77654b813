"""Cached tokens of a server whose usage reports none (llama-cpp-python's): counted from its verbose
log with ``remote.server_log``, stored per row with where they came from and summed in the
summary; unknown (null) without the log, never 0."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml
from rich.console import Console

from rotscope.analysis.summary import load_summary
from rotscope.backends.server_log import Record, ServerLog, records
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.tokenizers.remote import ApproximateTokenizer, render_plain
from tests.support.chat_server import ChatServer
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

SCHEMA = json.loads(resources.files("rotscope").joinpath("schemas/summary.schema.json").read_text())

# Three requests as llama-cpp-python 0.3's server logged them (the timing lines shortened): the
# first kept nothing, the second 125 of 133 tokens, the third all but the one it replays.
SERVER_LOG = """\
llama_perf_context_print:        load time =       0.42 ms
llama_perf_context_print: prompt eval time =       0.09 ms /   133 tokens (    0.00 ms per token)
llama_perf_context_print:        eval time =    8659.42 ms /     3 runs   ( 2886.47 ms per token)
INFO:     127.0.0.1:53490 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama.generate: 125 prefix-match hit, remaining 8 prompt tokens to eval
llama_perf_context_print: prompt eval time =     645.29 ms /     8 tokens (   80.66 ms per token)
INFO:     127.0.0.1:50504 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama.generate: 132 prefix-match hit, remaining 1 prompt tokens to eval
llama_perf_context_print: prompt eval time =       0.00 ms /     1 tokens (    0.00 ms per token)
"""


def test_each_request_is_its_prefix_hit_and_its_prompt_eval_line() -> None:
    assert records(SERVER_LOG) == [Record(0, 133), Record(125, 8), Record(132, 1)]


def test_the_log_is_read_from_where_it_ended_and_must_add_up_to_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    first, second, third = SERVER_LOG.split("INFO:")[0], *SERVER_LOG.split("INFO:")[1:]
    path.write_text(first, encoding="utf-8")
    log = ServerLog(path)  # what was there before the run is not this run's
    assert log.cached_tokens(133) is None
    with path.open("a", encoding="utf-8") as handle:
        handle.write("INFO:" + second)
    assert log.cached_tokens(133) == 125
    assert log.cached_tokens(133) is None  # nothing new: unknown, not the last request's count
    with path.open("a", encoding="utf-8") as handle:
        handle.write("INFO:" + third)
    assert log.cached_tokens(140) is None  # 132 + 1 is not 140: another request's record
    path.write_text("INFO:" + third, encoding="utf-8")  # the server restarted: a shorter, new log
    assert log.cached_tokens(133) == 132
    with pytest.raises(BadInput, match=r"absent\.log is not a file"):
        ServerLog(tmp_path / "absent.log")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChatServer]:
    counter = ApproximateTokenizer()
    started = ChatServer(
        tokenize=lambda messages: counter.encode(render_plain(messages)),
        cache_slots=1,  # a server that keeps its last prompt
        llama_log=tmp_path / "server.log",
    ).start()
    yield started
    started.stop()


def config_data(server: ChatServer, tmp_path: Path) -> dict[str, object]:
    corpus = nonsense_corpus(tmp_path / "corpus", files=3, lines=60)
    return {
        "model": "openai/stub",
        "tasks": ["niah"],
        "limit": 2,
        "lengths": [200],
        "depths": [0.0, 1.0],
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt"), "variants": 1},
        "remote": {"base_url": server.base_url},
        "cache": {"enabled": False},
        "limits": {"openai": {"concurrency": 1}},
        "order": "prefix",
    }


def stored(run_dir: Path) -> list[tuple[int, int | None, str | None]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        return db.execute("SELECT usage_prompt_tokens, cached_tokens, cached_source FROM items").fetchall()


def test_cached_tokens_are_counted_from_the_log_per_row_and_summed(
    server: ChatServer, tmp_path: Path
) -> None:
    assert server.llama_log is not None
    server.llama_log.write_text("llama_perf_context_print: prompt eval time = 1.0 ms / 99 tokens\n")
    data = config_data(server, tmp_path)
    run_dir = run_experiment(
        build_config({**data, "remote": {**data["remote"], "server_log": str(server.llama_log)}}),  # type: ignore[dict-item]
        run_dir=tmp_path / "run",
    )
    rows = stored(run_dir)
    kept = [record.kept for record in records(server.llama_log.read_text())[1:]]
    assert len(rows) == len(kept) == 4 and sum(kept) > 0  # the cases share their haystack's start
    assert sorted(cached for _, cached, _ in rows) == sorted(kept)  # type: ignore[type-var]
    assert {source for _, _, source in rows} == {"server_log"}
    tokens = load_summary(run_dir).model_dump()["tokens"]
    assert (tokens["cached"], tokens["cached_from_log"], tokens["cached_unknown"]) == (sum(kept), 4, 0)
    assert tokens["evaluated"] == sum(prompt for prompt, _, _ in rows) - sum(kept)


def test_without_the_log_a_server_reporting_none_leaves_them_unknown(
    server: ChatServer, tmp_path: Path
) -> None:
    run_dir = run_experiment(build_config(config_data(server, tmp_path)), run_dir=tmp_path / "run")
    rows = stored(run_dir)
    assert len(rows) == 4 and {(cached, source) for _, cached, source in rows} == {(None, None)}
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    tokens = summary["tokens"]
    assert (tokens["cached"], tokens["evaluated"], tokens["cached_unknown"]) == (None, None, 4)
    jsonschema.validate(summary, SCHEMA)
    console = Console(width=400, record=True)
    print_summary(typed, console)  # the views say so rather than show 0 cached as a measurement
    text = console.export_text()
    assert "4 calls' cached tokens unknown" in text and "evaluated unknown, from cache unknown" in text
    report = render_report(run_dir)
    assert "cached tokens unknown for 4 calls" in report and "evaluated unknown" in report


def test_the_log_needs_one_call_at_a_time(server: ChatServer, tmp_path: Path) -> None:
    data = config_data(server, tmp_path)
    data["remote"] = {**data["remote"], "server_log": "server.log"}  # type: ignore[dict-item]
    data["limits"] = {"openai": {"concurrency": 4}}
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    line = assert_bad_input(invoke("run", path, "--dry-run"), "remote.server_log", "concurrency: 1, not 4")
    assert str(tmp_path / "server.log") in line  # resolved against the experiment file's folder
