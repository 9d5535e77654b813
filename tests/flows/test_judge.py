"""The optional judge: only undecided replies go to it, its verdict replaces their score, and every
judged row carries the judge model and the hash of the fixed prompt."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rotscope.analysis.summary import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.backends.remote_options import RemoteOptions
from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.html import render_report
from rotscope.scoring.judge import (
    JUDGE_PROMPT,
    JUDGE_PROMPT_SHA256,
    JUDGE_PROMPT_VERSION,
    judged_score,
    parse_verdict,
    undecided,
)
from rotscope.types import Case, Evidence, GenerateRequest, Oracle, Score

PARAPHRASE = "zzz qqq plover"  # names no answer, no trap, is no abstention, is not in the context


def model_reply(request: GenerateRequest) -> str:
    """Right (or abstaining) at 200 tokens, an undecidable paraphrase at 300."""
    if len(request.token_ids) > 250:
        return PARAPHRASE
    return lexical_responder()(request)


class JudgeModel:
    """Grades by rule, counting calls and keeping the prompts it saw."""

    def __init__(self, reply: Callable[[str], str] | None = None) -> None:
        self.reply = reply or self.fair
        self.prompts: list[str] = []

    @staticmethod
    def fair(prompt: str) -> str:
        return "ABSTAINED" if "Expected answer: the document does not contain" in prompt else "CORRECT."

    def __call__(self, request: GenerateRequest) -> str:
        self.prompts.append(request.messages[-1]["content"])
        return self.reply(self.prompts[-1])


@pytest.fixture()
def make_config(tmp_path: Path, prose: Callable[..., str]) -> Callable[..., ExperimentConfig]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number in range(3):
        (corpus / f"doc{number}.txt").write_text(prose(60, seed=number), encoding="utf-8")

    def make(**changes: Any) -> ExperimentConfig:
        data: dict[str, Any] = {
            "model": "fake/lexical",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [200, 300],
            "depths": [0.0, 1.0],
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        }
        return build_config({**data, **changes})

    return make


def rows(run_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM items ORDER BY item_id")]


def judged_run(
    make_config: Callable[..., ExperimentConfig], run_dir: Path, judge: JudgeModel
) -> list[dict[str, Any]]:
    run_experiment(
        make_config(judge={"model": "fake/lexical"}),
        run_dir=run_dir,
        backend=FakeBackend("lexical", model_reply),
        judge_backend=FakeBackend("judge", judge),
    )
    return rows(run_dir)


def test_only_undecided_replies_are_judged_and_marked(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    judge = JudgeModel()
    stored = judged_run(make_config, tmp_path / "run", judge)
    long_rows = [row for row in stored if row["length_target"] == 300]
    short_rows = [row for row in stored if row["length_target"] == 200]
    assert len(judge.prompts) == len(long_rows) > 0
    assert all(row["judge_verdict"] is None and row["judge_prompt_sha256"] is None for row in short_rows)
    for row in long_rows:
        assert row["response"] == PARAPHRASE
        assert row["outcome"] == "correct"
        assert row["judge_verdict"] == ("abstained" if row["control"] else "correct")
        assert row["judge_prompt_sha256"] == JUDGE_PROMPT_SHA256
        assert row["judge_model"] == "fake/lexical"
        assert row["judge_response"] in ("CORRECT.", "ABSTAINED")
    # The judge sees the question, the expected answer and the reply, never the context.
    assert all(PARAPHRASE in prompt and "<context>" not in prompt for prompt in judge.prompts)

    summary = load_summary(tmp_path / "run").model_dump()
    schema = resources.files("rotscope").joinpath("schemas/summary.schema.json").read_text()
    jsonschema.validate(summary, json.loads(schema))
    for cell in summary["cells"]:
        assert cell["judged"] == (cell["n"] if cell["length"] == 300 else 0)
    assert summary["judge"] == {
        "model": "fake/lexical",
        "prompt_sha256": [JUDGE_PROMPT_SHA256],
        "verdicts": {
            "abstained": sum(row["control"] for row in long_rows),
            "correct": sum(not row["control"] for row in long_rows),
        },
    }
    assert '<small class="judged">judged 2</small>' in render_report(tmp_path / "run")


def test_without_a_judge_undecided_replies_stay_wrong(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_experiment(make_config(), run_dir=tmp_path / "run", backend=FakeBackend("lexical", model_reply))
    long_rows = [row for row in rows(tmp_path / "run") if row["length_target"] == 300]
    assert {(row["outcome"], row["category"]) for row in long_rows} == {
        ("incorrect", "wrong_answer"),
        ("incorrect", "hallucinated"),
    }
    assert all(row["judge_verdict"] is None for row in long_rows)
    assert load_summary(tmp_path / "run").model_dump()["judge"] is None


@pytest.mark.parametrize(
    ("reply", "verdict", "outcome"),
    [("INCORRECT", "incorrect", "incorrect"), ("I am not sure", "unparsed", "incorrect")],
)
def test_a_judge_that_rejects_or_says_nothing_keeps_the_string_score(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path, reply: str, verdict: str, outcome: str
) -> None:
    stored = judged_run(make_config, tmp_path / "run", JudgeModel(lambda _: reply))
    long_rows = [row for row in stored if row["length_target"] == 300]
    assert {row["judge_verdict"] for row in long_rows} == {verdict}
    assert {row["outcome"] for row in long_rows} == {outcome}


def test_a_failing_judge_leaves_error_rows_that_resume_judges(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    """A judge that cannot be reached decides nothing: the rows it should have graded are errors
    (out of accuracy, never scored wrong), and ``--resume`` judges them."""

    def broken(prompt: str) -> str:
        raise ConnectionError("judge unreachable")

    stored = judged_run(make_config, tmp_path / "run", JudgeModel(broken))
    long_rows = [row for row in stored if row["length_target"] == 300]
    assert long_rows and all(
        row["judge_verdict"] == "failed" and "unreachable" in row["judge_response"] for row in long_rows
    )
    assert all(row["status"] == "error" and row["error"].startswith("judge: ") for row in long_rows)
    assert all(row["status"] == "ok" for row in stored if row["length_target"] == 200)

    run_experiment(
        make_config(judge={"model": "fake/lexical"}),
        run_dir=tmp_path / "run",
        resume=True,
        backend=FakeBackend("lexical", model_reply),
        judge_backend=FakeBackend("judge", JudgeModel()),
    )
    resumed = [row for row in rows(tmp_path / "run") if row["length_target"] == 300]
    assert all(row["status"] == "ok" and row["judge_verdict"] in ("correct", "abstained") for row in resumed)
    assert all(row["outcome"] == "correct" and row["error"] is None for row in resumed)


def test_prompt_hash_is_of_the_versioned_prompt() -> None:
    expected = hashlib.sha256(f"{JUDGE_PROMPT_VERSION}\n{JUDGE_PROMPT}".encode()).hexdigest()
    assert expected == JUDGE_PROMPT_SHA256
    assert len(JUDGE_PROMPT_SHA256) == 64


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (Score("incorrect", "wrong_answer"), True),
        (Score("incorrect", "hallucinated"), True),
        (Score("incorrect", "decoy"), False),
        (Score("incorrect", "context_value"), False),
        (Score("incorrect", "format"), False),
        (Score("incorrect", "empty"), False),
        (Score("abstained", "abstained"), False),
        (Score("correct"), False),
        (Score("error", "error"), False),
    ],
)
def test_undecided_is_exactly_wrong_answer_and_hallucinated(result: Score, expected: bool) -> None:
    assert undecided(result) is expected


def test_verdicts_map_to_scores() -> None:
    probe = Case("c", "niah", (Evidence("e", "x"),), "What?", Oracle("blue"))
    control = probe.absent_control()
    wrong = Score("incorrect", "wrong_answer")
    assert judged_score(probe, "correct", wrong) == Score("correct")
    assert judged_score(probe, "abstained", wrong) == Score("abstained", "abstained")
    assert judged_score(probe, "incorrect", wrong) == wrong
    assert judged_score(control, "abstained", Score("incorrect", "hallucinated")) == Score("correct")
    assert parse_verdict("Verdict: incorrect, because") == "incorrect"
    assert parse_verdict("CORRECT") == "correct"
    assert parse_verdict("no idea") is None


def test_the_judge_backend_is_built_from_the_config(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    run_experiment(
        make_config(judge={"model": "fake/lexical"}),
        run_dir=tmp_path / "run",
        backend=FakeBackend("lexical", model_reply),
    )
    long_rows = [row for row in rows(tmp_path / "run") if row["length_target"] == 300]
    assert all(row["judge_model"] == "fake/lexical" and row["judge_verdict"] for row in long_rows)


def test_the_judge_never_inherits_the_main_models_connection(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key variable, server or parameters set for the model under test stay with it: the judge
    gets its own ``judge.remote`` (here the defaults)."""
    from rotscope.execution.workflows import run_steps

    built: list[ExperimentConfig] = []
    create = run_steps.create_backend

    def recording(config: ExperimentConfig) -> Any:
        built.append(config)
        return create(config)

    monkeypatch.setattr(run_steps, "create_backend", recording)
    main_remote = {"base_url": "http://10.0.0.5:8000/v1", "api_key_env": "LOCAL_KEY", "params": {"top_k": 20}}
    run_experiment(
        make_config(
            remote=main_remote, judge={"model": "fake/lexical", "remote": {"api_key_env": "JUDGE_KEY"}}
        ),
        run_dir=tmp_path / "run",
        backend=FakeBackend("lexical", model_reply),
    )
    (judge_config,) = built
    assert judge_config.model == "fake/lexical"
    judge_remote = judge_config.section(RemoteOptions)
    assert judge_remote.base_url is None and judge_remote.params == {}
    assert judge_remote.api_key_env == "JUDGE_KEY"


def test_each_question_of_a_multi_question_prompt_is_judged_on_its_own_answer(
    make_config: Callable[..., ExperimentConfig], tmp_path: Path
) -> None:
    judge = JudgeModel()
    run_experiment(
        make_config(judge={"model": "fake/lexical"}, questions_per_prompt=2, lengths=[300], controls=False),
        run_dir=tmp_path / "run",
        backend=FakeBackend("lexical", lambda request: "Q1: zzz qqq\nQ2: plover wren"),
        judge_backend=FakeBackend("judge", judge),
    )
    stored = rows(tmp_path / "run")
    assert len(stored) == len(judge.prompts) == 4  # 2 depths x 1 prompt of 2 questions
    replies = sorted(prompt.split("Reply: ")[1].splitlines()[0] for prompt in judge.prompts)
    assert replies == ["plover wren", "plover wren", "zzz qqq", "zzz qqq"]
    assert all(row["judge_verdict"] == "correct" and row["outcome"] == "correct" for row in stored)
