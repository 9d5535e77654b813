"""The JSON Lines files a run writes read back whole: ``cases -o F`` of a case text holding line
separators is a case file a run takes; a model-written note holding U+2028
leaves a session the rerun and the planner read; a partial session torn inside a UTF-8 character
is continued by the rerun instead of failing it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.backends.fake import FakeBackend, echo_responder
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import SessionNotWritten
from rotscope.execution.state.run_folder import SESSION_DIR
from rotscope.execution.workflows.runner import run_experiment
from rotscope.filler.session import is_note, load_transcript
from rotscope.store import RunStore
from rotscope.tasks.cases import read_case_file
from rotscope.types import GenerateRequest
from tests.support.cli_helpers import invoke, nonsense_corpus

ODD = "\u2028\u2029\u0085"


def test_cases_written_with_separators_in_their_text_are_a_case_file_again(tmp_path: Path) -> None:
    records = [
        {
            "case_id": f"sep-{number}",
            "question": f"What is the Brant{ODD}gate code {number}?",
            "documents": [
                # the separators in the question only: the fake's regex tokenizer cannot place evidence
                # holding them at token boundaries, so such a case would be rejected and measure nothing
                {"id": "fact", "text": f"The Brantgate code is {4000 + number}.", "claims": ["code"]}
            ],
            "claims": {"code": [str(4000 + number)]},
            "required_claims": ["code"],
        }
        for number in range(2)
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    corpus = nonsense_corpus(tmp_path / "corpus")
    config: dict[str, Any] = {
        "model": "fake/lexical",
        "tasks": ["cases"],
        "cases": str(cases),
        "lengths": [300],
        "depths": [0.5],
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    first = tmp_path / "first.yaml"
    first.write_text(yaml.safe_dump(config), encoding="utf-8")
    ran = invoke("run", first, "--out", tmp_path / "run")
    assert ran.exit_code == 0, ran.output
    written = tmp_path / "written.jsonl"
    result = invoke("cases", tmp_path / "run", "-o", written)
    assert result.exit_code == 0, result.output
    assert written.read_bytes().count(b"\n") == len(read_case_file(written)) > 0
    assert all(ODD in record.question for record in read_case_file(written))
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump({**config, "cases": str(written)}), encoding="utf-8")
    rerun = invoke("run", again, "--out", tmp_path / "again")
    assert rerun.exit_code == 0, rerun.output


def _config() -> ExperimentConfig:
    """A model-written session; its one prompt is rejected (the needle does not meet token boundaries
    in the echo fake's notes), which is why the runs below allow an empty plan: the session file is
    what they read back."""
    return ExperimentConfig.model_validate(
        {
            "name": "notes",
            "model": "fake/echo",
            "tasks": ["niah"],
            "lengths": [2048],
            "depths": [0.5],
            "limit": 1,
            "filler": {"kind": "session", "assistant": "model", "variants": 1, "note_tokens": 16},
        }
    )


class Notes(FakeBackend):
    """The echo fake whose session notes hold line separators."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.notes = 0
        respond = echo_responder()

        def responder(request: GenerateRequest) -> str:
            if "Question: " in request.messages[-1]["content"]:
                return respond(request)
            if fail_after is not None and self.notes >= fail_after:
                raise RuntimeError("engine out of memory")
            self.notes += 1
            return f"note {self.notes}:{ODD}caf\u00e9 done"

        super().__init__("echo", responder)


def _session(run_dir: Path) -> Path:
    [path] = (run_dir / SESSION_DIR).glob("*.jsonl")
    return path


def test_a_note_holding_line_separators_is_read_back_by_the_rerun(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = Notes()
    run_experiment(_config(), run_dir=run_dir, backend=first, allow_empty=True)
    notes = [turn.content for turn in load_transcript(_session(run_dir)) if is_note(turn)]
    assert len(notes) == first.notes > 0
    assert all(ODD in note for note in notes)  # stored as written
    with RunStore.read(run_dir) as store:
        calls = store.calls()
    resumed = Notes()
    run_experiment(_config(), run_dir=run_dir, backend=resumed, resume=True, allow_empty=True)
    assert resumed.notes == 0  # the stored session was read, not written again
    with RunStore.read(run_dir) as store:
        assert store.calls() == calls


def test_a_partial_session_torn_inside_a_character_is_continued(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(SessionNotWritten):
        run_experiment(_config(), run_dir=run_dir, backend=Notes(fail_after=1), allow_empty=True)
    [partial] = (run_dir / SESSION_DIR).glob("*.partial.jsonl")
    with partial.open("ab") as out:
        out.write('{"role": "assistant", "content": "caf\u00e9 \u20ac'.encode()[:-1])  # a crash mid-character
    again = Notes()
    run_experiment(_config(), run_dir=run_dir, backend=again, allow_empty=True)
    whole = Notes()
    run_experiment(_config(), run_dir=tmp_path / "whole", backend=whole, allow_empty=True)
    assert again.notes == whole.notes - 1  # the stored note replayed, the torn line dropped
    turns, expected = load_transcript(_session(run_dir)), load_transcript(_session(tmp_path / "whole"))
    assert len(turns) == len(expected)
    assert [turn for turn in turns if not is_note(turn)] == [turn for turn in expected if not is_note(turn)]
