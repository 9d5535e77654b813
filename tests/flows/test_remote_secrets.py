"""A planted API key never reaches run.db, exports, the report, the terminal or an error message,
even when the server echoes it back in every failure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotscope.cli import app
from tests.support.chat_server import ChatServer

KEY_ENV = "ROTSCOPE_PLANTED_KEY"
PLANTED_KEY = "sk-planted-SECRET-123"


def test_planted_key_appears_nowhere(
    tmp_path: Path, prose: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text(prose(120), encoding="utf-8")
    server = ChatServer().start()
    server.script = lambda key: ("500", "500", "500") if int(key, 16) % 2 else ()
    config = tmp_path / "experiment.yaml"
    config.write_text(
        "tasks: [niah]\nlimit: 2\nlengths: [160]\ndepths: [0.0, 1.0]\n"
        f"filler: {{kind: text, glob: '{corpus}/*.txt'}}\n"
        "remote: {max_attempts: 2, backoff_initial_s: 0.01, timeout_s: 2}\n"
        f"cache: {{path: '{tmp_path / 'cache' / 'responses.db'}'}}\n"
    )
    run_dir = tmp_path / "run"
    runner = CliRunner()
    outputs: list[str] = []
    try:
        first = runner.invoke(
            app,
            ["run", str(config), "--model", "openai/m", "--base-url", server.base_url,
             "--api-key-env", KEY_ENV, "--out", str(run_dir)],
        )  # fmt: skip
        outputs.append(first.output)
        assert first.exit_code == 0, first.output
        server.refuse_after, server.refusal = len(server.log), "401"
        refused = runner.invoke(app, ["run", "--resume", str(run_dir)])
        outputs.append(refused.output)
    finally:
        server.stop()
    assert refused.exit_code == 2
    assert "refused the API key" in refused.output and "[redacted]" in refused.output
    assert {entry.authorization for entry in server.log} == {f"Bearer {PLANTED_KEY}"}

    for name, format in (("rows.csv", "csv"), ("rows.jsonl", "jsonl"), ("rows.parquet", "parquet")):
        exported = runner.invoke(
            app, ["export", str(run_dir), "--format", format, "-o", str(tmp_path / name)]
        )
        assert exported.exit_code == 0, exported.output
    for command in (["report", str(run_dir)], ["show", str(run_dir)], ["show", str(run_dir), "--json"]):
        shown = runner.invoke(app, command)
        assert shown.exit_code == 0, shown.output
        outputs.append(shown.output)

    errors = (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    assert "HTTP 500: scripted failure for Bearer [redacted]" in errors  # the echo was there, and redacted
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {path.name for path in written} >= {
        "run.db",
        "config.yaml",
        "report.html",
        "rows.parquet",
        "responses.db",
    }
    for path in written:
        assert PLANTED_KEY.encode() not in path.read_bytes(), path
    for output in outputs:
        assert PLANTED_KEY not in output


def test_a_key_echoed_in_successful_replies_is_stored_nowhere(
    tmp_path: Path, prose: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway that echoes the request's headers in every 200 reply, to the subject and to the
    judge: run.db, the response cache, the exports and the report hold the redaction, not the key."""
    monkeypatch.setenv(KEY_ENV, PLANTED_KEY)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text(prose(120), encoding="utf-8")
    server = ChatServer().start()
    # No accepted answer in it: deterministic scoring cannot decide, so every reply is judged.
    server.reply = lambda text, authorization: f"CORRECT, says the gateway to {authorization}"
    remote = f"{{base_url: '{server.base_url}', api_key_env: {KEY_ENV}, timeout_s: 2}}"
    config = tmp_path / "experiment.yaml"
    config.write_text(
        "tasks: [niah]\nlimit: 2\nlengths: [160]\ndepths: [0.0, 1.0]\n"
        f"filler: {{kind: text, glob: '{corpus}/*.txt'}}\n"
        f"remote: {remote}\njudge: {{model: openai/judge, remote: {remote}}}\n"
        f"cache: {{path: '{tmp_path / 'cache' / 'responses.db'}'}}\n"
    )
    run_dir = tmp_path / "run"
    runner = CliRunner()
    try:
        result = runner.invoke(app, ["run", str(config), "--model", "openai/m", "--out", str(run_dir)])
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    outputs = [result.output]
    for name, format in (("rows.csv", "csv"), ("rows.jsonl", "jsonl"), ("rows.parquet", "parquet")):
        exported = runner.invoke(
            app, ["export", str(run_dir), "--format", format, "-o", str(tmp_path / name)]
        )
        assert exported.exit_code == 0, exported.output
    for command in (["report", str(run_dir)], ["show", str(run_dir)], ["export", str(run_dir)]):
        shown = runner.invoke(app, command)
        assert shown.exit_code == 0, shown.output
        outputs.append(shown.output)

    rows = (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    assert "says the gateway to Bearer [redacted]" in rows  # the replies echoed it, redacted
    assert '"judge_response": "CORRECT, says the gateway to Bearer [redacted]"' in rows
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {path.name for path in written} >= {"run.db", "report.html", "rows.parquet", "responses.db"}
    for path in written:
        assert PLANTED_KEY.encode() not in path.read_bytes(), path
    for output in outputs:
        assert PLANTED_KEY not in output
