"""Replay: recorded prompts with marked evidence become a position matrix over their own padding.
The evidence bytes, the question and everything outside the context stay as recorded; only the
padding moves, in its recorded order; each variant is verified as any prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.config.experiment import ExperimentConfig, build_config, load_config
from rotscope.store import RunStore
from rotscope.tasks import get_task
from rotscope.tasks.replay import read_replay_file, render_recording
from rotscope.types import Tokenizer
from tests.support.cli_helpers import assert_bad_input, invoke

EXAMPLES = Path(__file__).parents[2] / "examples" / "replay"
RECORDED = EXAMPLES / "recorded.jsonl"
POSITIONS = ["beginning", "early-middle", "midpoint", "late-middle", "end"]
MARK = re.compile(r"\[\[evidence(?::[^\]]*)?\]\](.*?)\[\[/evidence\]\]")


def _config(**fields: Any) -> ExperimentConfig:
    return build_config(
        {"model": "fake/lexical", "tasks": ["replay"], "replay": str(RECORDED), "depths": POSITIONS, **fields}
    )


def _recorded_pieces(line: dict[str, Any]) -> list[str]:
    """The evidence as the file holds it, read independently of the replay reader."""
    content = line["messages"][-1]["content"]
    if line.get("evidence"):
        return [content[r["start"] : r["end"]] for r in line["evidence"]]
    return MARK.findall(content)


def _without_markers(text: str) -> str:
    return re.sub(r"\[\[/?(?:evidence(?::[^\]]*)?|context)\]\]", "", text)


def test_three_recordings_yield_verified_variants_with_the_recorded_evidence_bytes(
    tokenizer: Tokenizer,
) -> None:
    lines = [json.loads(text) for text in RECORDED.read_text(encoding="utf-8").splitlines()]
    recordings = read_replay_file(RECORDED)
    assert len(recordings) == len(lines) == 3
    config = _config()
    for line, recording in zip(lines, recordings, strict=True):
        rendered, rejected = render_recording(recording, config, tokenizer)
        variants = [(case, layout, prompt) for case, layout, prompt in rendered if not case.control]
        assert [layout.position for _, layout, _ in variants] == POSITIONS, rejected
        pieces = _recorded_pieces(line)
        recorded_last = _without_markers(line["messages"][-1]["content"])
        recorded_messages = [*line["messages"][:-1], {**line["messages"][-1], "content": recorded_last}]
        recorded_tokens = len(tokenizer.encode(tokenizer.render_chat(recorded_messages), special=True))
        assert {layout.length_tokens for _, layout, _ in variants} == {recorded_tokens}
        reached = []
        for _, _, prompt in variants:
            spans = sorted(prompt.spans, key=lambda span: span.token_start)
            found = [tokenizer.decode(prompt.token_ids[s.token_start : s.token_end]).strip() for s in spans]
            assert found == pieces  # the same bytes, in the recorded order
            content = prompt.messages[-1]["content"]
            assert list(prompt.messages[:-1]) == line["messages"][:-1]
            question_at = recorded_last.index(line["question"])
            assert content.endswith(recorded_last[question_at:])  # the question and what follows, as recorded
            assert sorted(content) == sorted(recorded_last)  # nothing added or lost: the same characters
            moved = content
            for piece in pieces:
                moved = (
                    moved.replace("\n" + piece, "", 1)
                    if "\n" + piece in moved
                    else moved.replace(piece + "\n", "", 1)
                )
            padding_lines = [text for text in moved.splitlines() if text.strip()]
            recorded_lines = [
                text for text in recorded_last.splitlines() if text.strip() and text not in pieces
            ]
            assert padding_lines == recorded_lines  # the padding in its recorded order
            reached.append(spans[0].depth)
        assert reached == sorted(reached) and reached[0] == 0.0 and reached[-1] == 1.0


def test_a_replay_run_scores_every_variant_and_shows_the_position_effect(tmp_path: Path) -> None:
    config = tmp_path / "replay.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": "fake/lexical-recent",
                "tasks": ["replay"],
                "replay": str(RECORDED),
                "depths": POSITIONS,
            }
        ),
        encoding="utf-8",
    )
    result = invoke("run", config, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    with RunStore.read(tmp_path / "run") as store:
        rows = [row for row in store.rows() if not row["control"]]
    assert len(rows) == 15 and {row["status"] for row in rows} == {"ok"}
    outcome = {(row["case_id"], row["position"]): row["outcome"] for row in rows}
    for case_id in ("incident-refund", "incident-dock", "incident-customs"):
        assert outcome[(case_id, "end")] == "correct"
        assert outcome[(case_id, "beginning")] != "correct"  # lexical-recent reads the last half only


def test_the_example_experiment_names_the_replay_file() -> None:
    config = load_config(EXAMPLES / "experiment.yaml")
    assert Path(config.replay or "") == RECORDED.resolve()
    family = get_task("replay", config)
    assert [case.case_id for case in family.cases()] == [
        "incident-refund",
        "incident-dock",
        "incident-customs",
    ]


@pytest.mark.parametrize(
    ("content", "changes", "fragments"),
    [
        ("log\n[[evidence]]The code is 4.\nQuestion: What is the code?", {}, ("never closed",)),
        (
            "log\nThe code is 4.\nQuestion: What is the code?",
            {"question": "Which code?"},
            ("'question'", "found 0"),
        ),
        (
            "[[evidence]]The code is 4.[[/evidence]]\nQuestion: What is the code?",
            {"evidence": [{"start": 0, "end": 3}]},
            ("not both",),
        ),
        (
            "log\n[[evidence]]The code is 4.[[/evidence]]\nQuestion: What is the code?",
            {"required_claims": ["nope"]},
            ("required_claims", "'nope'"),
        ),
    ],
)
def test_a_bad_recording_is_one_line_naming_file_line_and_field(
    tmp_path: Path, content: str, changes: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    record = {
        "case_id": "r1",
        "messages": [{"role": "user", "content": content}],
        "question": "What is the code?",
        "claims": {"code": ["4"]},
        "required_claims": ["code"],
        **changes,
    }
    replay = tmp_path / "recorded.jsonl"
    replay.write_text(json.dumps(record) + "\n", encoding="utf-8")
    config = tmp_path / "replay.yaml"
    config.write_text(
        yaml.safe_dump({"model": "fake/lexical", "tasks": ["replay"], "replay": str(replay)}),
        encoding="utf-8",
    )
    assert_bad_input(invoke("run", config, "--out", tmp_path / "run"), f"{replay}:1", *fragments)
