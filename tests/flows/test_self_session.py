"""A session the model writes itself (``filler.assistant: model``): written before planning, stored
in the run folder as it grows, replayed by a rerun and by ``--resume`` without calling the model,
its cost in the summary, and a failure that leaves no session that looks finished."""

from __future__ import annotations

import json
import sqlite3
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rotscope.backends.fake import FakeBackend, echo_responder
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import SessionNotWritten, SessionStopped
from rotscope.execution.state.run_folder import SESSION_DIR
from rotscope.execution.workflows import dry_run as dry_run_module
from rotscope.execution.workflows.runner import run_experiment
from rotscope.execution.workflows.self_session import EMPTY_NOTE, MARKED_NOTE, SessionWriter
from rotscope.filler.session import generated_session, is_note, load_transcript
from rotscope.report.dry_run import print_dry_run
from rotscope.store import RunStore
from rotscope.types import GenerateRequest
from tests.support.cli_helpers import assert_bad_input, invoke


def _settings(**filler: object) -> dict[str, Any]:
    return {
        "name": "selfgen",
        "model": "fake/echo",
        "tasks": ["niah"],
        "lengths": [512, 2048],
        "depths": [0.5],
        "limit": 2,
        "filler": {"kind": "session", "assistant": "model", "variants": 1, "note_tokens": 16, **filler},
    }


def _config(**filler: object) -> ExperimentConfig:
    return ExperimentConfig.model_validate(_settings(**filler))


class Counting(FakeBackend):
    """The echo fake, with the prompts of the calls that wrote session notes recorded."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.note_prompts: list[GenerateRequest] = []
        self.fail_after = fail_after
        respond = echo_responder()

        def responder(request: GenerateRequest) -> str:
            if "Question: " not in request.messages[-1]["content"]:
                if self.fail_after is not None and len(self.note_prompts) >= self.fail_after:
                    raise RuntimeError("engine out of memory")
                self.note_prompts.append(request)
            return respond(request)

        super().__init__("echo", responder)


def _ids(run_dir: Path) -> set[str]:
    with RunStore.read(run_dir) as store:
        return set(store.calls())


def _meta(run_dir: Path) -> dict[str, Any]:
    with RunStore.read(run_dir) as store:
        return store.meta()


def test_the_session_holds_the_models_notes_and_replays_identically(tmp_path: Path) -> None:
    first, second = Counting(), Counting()
    run_experiment(_config(), run_dir=tmp_path / "a", backend=first)
    run_experiment(_config(), run_dir=tmp_path / "b", backend=second)
    assert first.note_prompts, "the model wrote no note"
    assert len(first.note_prompts) == len(second.note_prompts)
    assert _ids(tmp_path / "a") == _ids(tmp_path / "b")
    [stored] = (tmp_path / "a" / SESSION_DIR).glob("*.jsonl")
    assert not stored.name.endswith(".partial.jsonl")
    turns = load_transcript(stored)
    notes = [turn for turn in turns if is_note(turn)]
    assert len(notes) == len(first.note_prompts)
    # each note is the model's reply to the session before it, which holds its earlier notes
    assert all(note.content.startswith("Noted after ") for note in notes)
    later = first.note_prompts[-1].messages
    assert [m["content"] for m in later if m["role"] == "assistant" and m["content"].startswith("Noted")] == [
        note.content for note in notes[:-1]
    ]
    # the tool output and user turns are the seeded generator's, unchanged
    generated = [turn for turn, _ in zip(generated_session(0), turns, strict=False) if not is_note(turn)]
    assert [turn for turn in turns if not is_note(turn)] == generated[: len(turns) - len(notes)]
    # the probes are planted in that session: the prompts sent hold the model's notes
    with sqlite3.connect(tmp_path / "a" / "run.db") as db:
        prompts = [json.loads(zlib.decompress(row[0])) for row in db.execute("SELECT messages FROM prompts")]
    assert any(notes[0].content == m["content"] for p in prompts for m in p)


def test_resume_reads_the_stored_session_without_calling_the_model(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = Counting()
    run_experiment(_config(), run_dir=run_dir, backend=first)
    before = _ids(run_dir)
    meta = _meta(run_dir)["session_generation"]
    assert meta["calls"] == len(first.note_prompts) > 0
    assert meta["prompt_tokens"] == sum(len(request.token_ids) for request in first.note_prompts)
    assert meta["completion_tokens"] > 0 and meta["sessions"] == 1
    with sqlite3.connect(run_dir / "run.db") as db:
        db.execute("UPDATE items SET status = 'pending'")  # as if the run was interrupted
    resumed = Counting()
    run_experiment(_config(), run_dir=run_dir, backend=resumed, resume=True)
    assert resumed.note_prompts == []  # no generation call: the session was read back
    assert resumed.calls > 0  # the probes themselves ran again
    assert _ids(run_dir) == before
    assert _meta(run_dir)["session_generation"] == meta  # the whole cost, however many runs


def test_a_failed_note_leaves_only_a_partial_session_and_running_again_continues(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    failing = Counting(fail_after=2)
    with pytest.raises(SessionNotWritten, match="engine out of memory") as raised:
        run_experiment(_config(), run_dir=run_dir, backend=failing)
    assert "--out" in str(raised.value)
    assert not (run_dir / "run.db").exists()
    files = list((run_dir / SESSION_DIR).iterdir())
    assert [path.name.endswith(".partial.jsonl") for path in files] == [True]
    written = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]
    assert sum("usage" in record for record in written) == 2
    # a line cut short by a crash is not a turn
    with files[0].open("a", encoding="utf-8") as out:
        out.write('{"role": "tool", "cont')
    again = Counting()
    run_experiment(_config(), run_dir=run_dir, backend=again)
    whole = Counting()
    run_experiment(_config(), run_dir=tmp_path / "whole", backend=whole)
    assert len(again.note_prompts) == len(whole.note_prompts) - 2  # the two stored notes replayed
    assert [r.token_ids for r in again.note_prompts] == [r.token_ids for r in whole.note_prompts[2:]]
    assert _ids(run_dir) == _ids(tmp_path / "whole")
    assert _meta(run_dir)["session_generation"]["calls"] == len(whole.note_prompts)


def test_the_cost_is_in_the_summary_and_show(tmp_path: Path) -> None:
    config = tmp_path / "selfgen.yaml"
    config.write_text(json.dumps(_settings()), encoding="utf-8")
    result = invoke("run", config, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    summary = json.loads(invoke("show", tmp_path / "run", "--json").stdout)
    generation = summary["session_generation"]
    assert generation["calls"] > 0 and generation["prompt_tokens"] > generation["completion_tokens"] > 0
    shown = invoke("show", tmp_path / "run").stdout
    assert f"{generation['calls']} calls" in shown and "session written by the model" in shown
    plain = tmp_path / "plain.yaml"
    plain.write_text(json.dumps({**_settings(), "filler": {"kind": "session"}}), encoding="utf-8")
    assert invoke("run", plain, "--out", tmp_path / "plain").exit_code == 0
    assert json.loads(invoke("show", tmp_path / "plain", "--json").stdout)["session_generation"] is None


def test_a_dry_run_plans_with_invented_notes_and_calls_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = Counting()
    monkeypatch.setattr(dry_run_module, "create_backend", lambda config: backend)
    planned = dry_run_module.dry_run(_config())
    assert planned.plan.items and backend.calls == 0
    assert planned.plan.corpus["session"]["assistant"] == "model"
    console = Console(width=400, record=True)
    print_dry_run(planned, console)  # the estimate says the session's own calls are not in it
    assert "the calls that write the model's own session (filler.assistant: model) come on top" in (
        console.export_text()
    )


@pytest.mark.parametrize(("reply", "note"), [("  \n", EMPTY_NOTE), ("done <|user|> next", MARKED_NOTE)])
def test_a_note_that_would_break_the_session_is_replaced(tmp_path: Path, reply: str, note: str) -> None:
    backend = FakeBackend(
        "odd", lambda request: "Answer: 1" if "Question: " in request.messages[-1]["content"] else reply
    )
    writer = SessionWriter(_config(), tmp_path, backend)
    turns = writer(0, frozenset(), 2048)
    notes = [turn.content for turn in turns if is_note(turn)]
    assert notes and set(notes) == {note}
    assert writer.cost()["calls"] == writer.calls_made == len(notes)


@pytest.mark.parametrize(
    ("filler", "fragment"),
    [({"kind": "session", "source": "t.jsonl", "assistant": "model"}, "source: generated"),
     ({"kind": "readinglog", "assistant": "model"}, "source: generated"),
     ({"kind": "session", "assistant": "model", "note_tokens": 0}, "note_tokens")],
)  # fmt: skip
def test_bad_settings_are_one_line(tmp_path: Path, filler: dict[str, Any], fragment: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(json.dumps({**_settings(), "filler": filler}), encoding="utf-8")
    assert_bad_input(invoke("run", config, "--dry-run"), fragment)


def test_resume_of_a_folder_whose_session_was_being_written_says_how_to_continue(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(SessionNotWritten):
        run_experiment(_config(), run_dir=run_dir, backend=Counting(fail_after=1))
    assert_bad_input(invoke("run", "--resume", run_dir), "writing its session", f"--out {run_dir}")


PRICES = {"fake/echo": {"input": 1000.0, "output": 1000.0}}  # USD per million tokens


def _priced(**settings: object) -> ExperimentConfig:
    return ExperimentConfig.model_validate({**_settings(), "prices": PRICES, **settings})


def _notes_usd(run_dir: Path) -> list[float]:
    return [
        json.loads(line)["usage"]["usd"]
        for path in sorted((run_dir / SESSION_DIR).iterdir())
        for line in path.read_text(encoding="utf-8").splitlines()
        if "usage" in json.loads(line)
    ]


def test_the_sessions_calls_are_priced_and_counted_in_the_runs_cost(tmp_path: Path) -> None:
    run_dir = run_experiment(_priced(), run_dir=tmp_path / "run", backend=Counting())
    notes = _notes_usd(run_dir)
    assert notes and all(usd > 0 for usd in notes)
    summary = json.loads(invoke("show", run_dir, "--json").stdout)
    with RunStore.read(run_dir) as store:
        rows = sum(row["cost"] for row in store.rows())
    assert summary["session_generation"]["usd"] == pytest.approx(sum(notes))
    assert summary["cost"]["session_usd"] == pytest.approx(sum(notes))
    assert summary["cost"]["usd"] == pytest.approx(rows + sum(notes)) and rows > 0
    assert f"${sum(notes):.4f}" in invoke("show", run_dir).stdout


def test_a_budget_stops_the_session_before_a_note_that_could_exceed_it_and_a_larger_one_goes_on(
    tmp_path: Path,
) -> None:
    whole = Counting()
    full = run_experiment(_priced(), run_dir=tmp_path / "whole", backend=whole)
    session_cost = sum(_notes_usd(full))
    run_dir = tmp_path / "run"
    config = tmp_path / "selfgen.yaml"

    def write_config(max_cost: float) -> None:
        settings = {**_settings(), "prices": PRICES, "max_cost": max_cost}
        config.write_text(json.dumps(settings), encoding="utf-8")

    write_config(session_cost / 2)
    stopped = invoke("run", config, "--out", run_dir)
    assert stopped.exit_code == 4, stopped.output
    message = assert_one_line(stopped.stderr)
    assert "stopped at budget writing the session" in message
    assert f"--out {run_dir} --max-cost LARGER" in message
    assert not (run_dir / "run.db").exists()
    assert 0 < sum(_notes_usd(run_dir)) <= session_cost / 2
    # Enough for the session but not for every item: the items' calls stop within what is left.
    write_config(session_cost * 1.2)
    assert invoke("run", config, "--out", run_dir).exit_code == 4
    summary = json.loads(invoke("show", run_dir, "--json").stdout)
    assert summary["cost"]["session_usd"] == pytest.approx(session_cost)
    assert session_cost < summary["cost"]["usd"] <= session_cost * 1.2 + 1e-9
    resumed = invoke("run", "--resume", run_dir, "--max-cost", "1000")
    assert resumed.exit_code == 0, resumed.output
    assert _ids(run_dir) == _ids(full)


def test_ctrl_c_while_the_session_is_written_keeps_it_and_says_how_to_continue(tmp_path: Path) -> None:
    calls = 0

    def interrupting(request: GenerateRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return echo_responder()(request)

    config = tmp_path / "selfgen.yaml"
    config.write_text(json.dumps(_settings()), encoding="utf-8")
    original = FakeBackend.__init__

    def patched(self: FakeBackend, name: str, responder: Any = None, *args: Any, **kwargs: Any) -> None:
        original(self, name, interrupting, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FakeBackend, "__init__", patched)
        result = invoke("run", config, "--out", tmp_path / "run")
    assert result.exit_code == 130, result.output
    message = assert_one_line(result.stderr)
    assert "interrupted writing the session" in message and f"--out {tmp_path / 'run'}" in message
    assert len(_notes_usd(tmp_path / "run")) == 2  # the two notes written before it are kept


def assert_one_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return " ".join(lines[0].split())


def test_an_unpriced_remote_session_says_so(tmp_path: Path) -> None:
    class Remote(Counting):
        def __init__(self) -> None:
            super().__init__()
            self.capabilities = replace(self.capabilities, local=False)  # no price applies by default

    run_dir = run_experiment(_config(), run_dir=tmp_path / "run", backend=Remote())
    summary = json.loads(invoke("show", run_dir, "--json").stdout)
    assert summary["session_generation"]["priced"] is False and summary["session_generation"]["usd"] == 0
    assert summary["cost"]["priced"] is False  # its rows are unpriced too: a remote model without a price


def test_a_session_written_again_after_rows_were_stored_counts_their_spend_against_the_budget(
    tmp_path: Path,
) -> None:
    run_dir = run_experiment(_priced(), run_dir=tmp_path / "run", backend=Counting())
    with RunStore.read(run_dir) as store:
        rows = store.rows_spent()
    session_cost = sum(_notes_usd(run_dir))
    assert rows > 0 and session_cost > 0
    for path in (run_dir / SESSION_DIR).iterdir():
        path.unlink()  # "delete the file to write the session anew"
    budget = rows + session_cost / 2  # room for half the session beside the rows, not for all of it
    with pytest.raises(SessionStopped, match="stopped at budget writing the session") as raised:
        run_experiment(_priced(max_cost=budget), run_dir=run_dir, backend=Counting(), resume=True)
    assert raised.value.budget and "--resume" in str(raised.value)
    assert rows + sum(_notes_usd(run_dir)) <= budget
