"""A reply's terminal escapes (clear screen, window title, C1 CSI, bidi override) never reach a
terminal: export to a terminal, show, the gate's view and printed errors show them as escapes,
while a file written with -o keeps the stored text byte for byte."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import rotscope
from rotscope._util.safe_text import terminal_safe
from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.cli import app
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.records.summary import Summary
from rotscope.report.terminal import print_summary
from rotscope.types import GenerateRequest
from tests.support.chat_server import ChatServer

ROTSCOPE = Path(sys.executable).parent / "rotscope"
EVIL = "clear\x1b[2J title\x1b]0;pwned\x07 csi\x9b31m bidi\u202eevil"
RAW = ("\x1b[2J", "\x1b]0;pwned", "\x07", "\x9b", "\u202e")
SHOWN = r"clear\x1b[2J title\x1b]0;pwned\x07 csi\x9b31m bidi\u202eevil"


def assert_neutral(text: str) -> None:
    for sequence in RAW:
        assert sequence not in text, (sequence, text[:2000])


def evil_replies() -> Callable[[GenerateRequest], str]:
    """Replies carrying escapes; every third call fails with them in its error text."""
    calls = itertools.count()

    def reply(request: GenerateRequest) -> str:
        if next(calls) % 3 == 2:
            raise RuntimeError(f"engine said {EVIL}")
        return f"The answer is {EVIL}"

    return reply


@pytest.fixture()
def evil_run(tmp_path: Path, prose: Callable[..., str]) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text(prose(120), encoding="utf-8")
    config = build_config(
        {
            "model": "fake/evil",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [160],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
            "out": str(tmp_path / "run"),
        }
    )
    return run_experiment(config, backend=FakeBackend("evil", evil_replies()))


def in_terminal(*args: str | Path) -> tuple[int, str]:
    """Run the rotscope script with its stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(rotscope.__file__).parents[1]), "COLUMNS": "200"}
    process = subprocess.Popen([str(ROTSCOPE), *map(str, args)], stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_terminal_safe_shows_control_characters_as_escapes() -> None:
    assert terminal_safe(EVIL) == SHOWN
    assert terminal_safe("tab\tand\nnewline stay, é and 日本 too") == "tab\tand\nnewline stay, é and 日本 too"
    assert terminal_safe("\x00\x7f\x85\u2066\ud800") == r"\x00\x7f\x85\u2066\ud800"


def test_export_to_a_terminal_is_neutral_and_to_a_file_exact(evil_run: Path, tmp_path: Path) -> None:
    stored = {row["response"] for row in csv.DictReader(io.StringIO(_export_pipe(evil_run)))}
    assert f"The answer is {EVIL}" in stored  # a pipe is not a terminal: exact text

    code, shown = in_terminal("export", evil_run)
    assert code == 0, shown
    assert_neutral(shown)
    assert f"The answer is {SHOWN}" in shown and f"engine said {SHOWN}" in shown

    for format in ("csv", "jsonl"):
        out = tmp_path / f"rows.{format}"
        code, shown = in_terminal("export", evil_run, "--format", format, "-o", out)
        assert code == 0, shown
        written = out.read_text(encoding="utf-8")
        if format == "csv":
            rows = list(csv.DictReader(io.StringIO(written, newline="")))
            assert {row["response"] for row in rows} >= {f"The answer is {EVIL}", ""}
            assert any(row["error"].endswith(f"engine said {EVIL}") for row in rows)
        else:
            assert "The answer is clear\\u001b[2J title\\u001b]0;pwned\\u0007 csi\\u009b31m" in written


def _export_pipe(run_dir: Path) -> str:
    result = CliRunner().invoke(app, ["export", str(run_dir)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_show_and_gate_on_a_terminal_are_neutral(evil_run: Path, tmp_path: Path) -> None:
    for args in (
        ["show", evil_run],
        ["gate", "--baseline", evil_run, "--candidate", evil_run, "-o", tmp_path / "gate.json"],
    ):
        code, shown = in_terminal(*args)
        assert code in (0, 3), shown
        assert_neutral(shown)


def test_the_terminal_views_show_outside_text_escaped(evil_run: Path) -> None:
    """Case ids, failure lists and cache-check replies come from outside (a case file, a model)."""
    summary = load_summary(evil_run).model_dump()
    summary["positional_failures"] = [f"case-{EVIL}"]
    summary["capability_failures"] = [f"case-{EVIL}"]
    summary["cache_control"] = {
        "checked": 1, "compared": 1, "differing": 1, "warm_correct": 1.0, "cold_correct": 0.0, "rule": EVIL,
        "incident": True, "examples": [{"call_id": EVIL, "warm_response": EVIL, "cold_response": EVIL}],
    }  # fmt: skip
    screen = io.StringIO()
    print_summary(
        Summary.model_validate_json(json.dumps(summary)), Console(file=screen, force_terminal=True, width=200)
    )
    printed = screen.getvalue()
    assert "case-clear" in printed and "pwned" in printed
    assert_neutral(printed)  # rich's own styling escapes are there, no sequence from the text


def test_an_error_printed_from_a_server_is_neutral(tmp_path: Path, prose: Callable[..., str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.txt").write_text(prose(120), encoding="utf-8")
    config = tmp_path / "experiment.yaml"
    config.write_text(
        f"tasks: [niah]\nlimit: 1\nlengths: [160]\nfiller: {{kind: text, glob: '{corpus}/*.txt'}}\n"
        "cache: {enabled: false}\n"
    )
    server = ChatServer(refuse_after=0, refusal="401").start()
    server.error_detail = lambda authorization: f"denied {EVIL}"
    try:
        code, shown = in_terminal(
            "run", config, "--model", "openai/m", "--base-url", server.base_url, "--out", tmp_path / "run"
        )
    finally:
        server.stop()
    assert code == 2, shown
    assert "refused the API key" in shown and "denied clear\\x1b[2J" in shown
    assert_neutral(shown)
