"""``rotscope import`` of Inspect AI logs: a log written by Inspect's own writer
(``inspect eval rotscope/niah``) and one written by ``rotscope export --format inspect`` of a
rotscope run of the same experiment import back to the cells and controls of that run; a log that
is no rotscope task's, or Inspect missing, is one line."""

from __future__ import annotations

import importlib
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from tests.support.cli_helpers import assert_bad_input, invoke, valve_corpus

inspect_ai = pytest.importorskip("inspect_ai")
from inspect_ai.log import EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402

MODEL = "fake/lexical-recent"
"""Finds a needle near the end only: depth 0 scores 0, depth 1 scores 1, so the cells differ."""


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-tiktoken-cache"))


def _cells(run_dir: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    shown = invoke("show", run_dir, "--json")
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    cells = sorted(
        (c["task"], c["length"], c["depth"], c["position"], c["n"], c["instances"], c["correct"])
        for c in summary["cells"]
    )
    controls = sorted((c["task"], c["length"], c["n"], c["correct"]) for c in summary["controls"])
    return cells, controls


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One experiment run by rotscope (and exported) and by ``inspect eval rotscope/niah``."""
    root = tmp_path_factory.mktemp("inspect-import")
    corpus = valve_corpus(root / "corpus")
    data = {"name": "round-trip", "tasks": ["niah"], "lengths": [200, 300], "depths": [0.0, 1.0],
            "limit": 2, "filler": {"kind": "text", "glob": str(corpus / "*.txt")}}  # fmt: skip
    (root / "experiment.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    run = run_experiment(build_config({**data, "model": MODEL}), run_dir=root / "run")
    exported = invoke("export", run, "--format", "inspect", "-o", root / "run.eval")
    assert exported.exit_code == 0, exported.output
    importlib.import_module("rotscope.integrations.inspect.registry")  # as Inspect's entry point does
    evaluated = inspect_ai.eval(
        "rotscope/niah",
        task_args={"config": str(root / "experiment.yaml")},
        model=f"rotscope/{MODEL}",
        display="none",
        log_dir=str(root / "logs"),
    )
    assert evaluated[0].status == "success", evaluated[0].error
    return {"root": root, "run": run, "exported": root / "run.eval", "inspect": Path(evaluated[0].location)}


def test_both_logs_import_back_to_the_cells_of_the_run(logs: dict[str, Path]) -> None:
    root = logs["root"]
    expected = _cells(logs["run"])
    assert {cell[-1] for cell in expected[0]} == {0, 2}  # depth 0 missed, depth 1 found: not trivial
    for name in ("exported", "inspect"):
        result = invoke("import", logs[name], "--out", root / name)
        assert result.exit_code == 0, result.output
        assert _cells(root / name) == expected, name
        summary = json.loads(invoke("show", root / name, "--json").stdout)
        assert summary["imported"]["format"] == "inspect"
        assert (
            summary["imported"]["note"]
            == f"imported from {logs[name].name} (no prompts, spans or verification)"
        )
        assert summary["model"] == f"rotscope/{MODEL}"
    again = invoke("export", root / "inspect", "--format", "inspect", "-o", root / "again.eval")
    assert_bad_input(again, "no prompts to put in an Inspect log")


def test_a_log_of_no_rotscope_task_is_one_line(tmp_path: Path) -> None:
    sample = EvalSample(id="s1", epoch=1, input="hi", target="x", output=ModelOutput.from_content("m", "x"))
    log = EvalLog(
        eval=EvalSpec(
            created="2026-01-01T00:00:00+00:00", task="other", dataset=EvalDataset(), model="m", config={}
        ),
        samples=[sample],
    )
    write_eval_log(log, str(tmp_path / "other.eval"))
    result = invoke("import", tmp_path / "other.eval", "--out", tmp_path / "run")
    assert_bad_input(result, "other.eval: sample s1 (epoch 1): no 'task' in its metadata")
    assert not (tmp_path / "run").exists()
    (tmp_path / "broken.eval").write_bytes(b"not a zip")
    assert_bad_input(
        invoke("import", tmp_path / "broken.eval", "--out", tmp_path / "run"), "not an Inspect log"
    )


def test_another_tasks_log_imports_with_a_map_of_where_its_samples_keep_the_fields(tmp_path: Path) -> None:
    """Issue 51: an Inspect log of a task that is not rotscope's (its own metadata names), imported
    with ``--map``: each sample in its cell, its instance from nested metadata, unknown depth where
    the map names none; a map without a length, or on a table, is one line."""

    def sample(number: int, length: int, correct: bool) -> EvalSample:
        meta = {"ctx": {"tokens": length}, "doc": f"d{number // 2}", "needle_at": 0.25, "qid": f"q{number}"}
        return EvalSample(id=f"q{number}-{length}", epoch=1, input="q", target="a", metadata=meta,
                          scores={"match": Score(value="C" if correct else "I")})  # fmt: skip

    spec = EvalSpec(
        created="2026-01-01T00:00:00+00:00", task="longqa", dataset=EvalDataset(), model="m", config={}
    )
    samples = [
        sample(number, length, (number + length // 1000) % 3 != 0)
        for number in range(8)
        for length in (1000, 4000)
    ]
    write_eval_log(EvalLog(eval=spec, samples=samples), str(tmp_path / "other.eval"))
    fields = (
        "length=metadata.ctx.tokens,case_id=metadata.qid,instance_id=metadata.doc,depth=metadata.needle_at"
    )
    mapped = invoke("import", tmp_path / "other.eval", "--out", tmp_path / "run", "--map", fields)
    assert mapped.exit_code == 0, mapped.output
    summary = json.loads(invoke("show", tmp_path / "run", "--json").stdout)
    cells = {(cell["task"], cell["length"], cell["depth"]): (cell["n"], cell["instances"], cell["correct"])
             for cell in summary["cells"]}  # fmt: skip
    expected = {
        ("longqa", length, 0.25): (8, 4, sum((number + length // 1000) % 3 != 0 for number in range(8)))
        for length in (1000, 4000)
    }
    assert cells == expected
    bare = invoke(
        "import", tmp_path / "other.eval", "--out", tmp_path / "run2", "--map", "length=metadata.ctx.tokens"
    )
    assert bare.exit_code == 0, bare.output
    (one, _) = json.loads(invoke("show", tmp_path / "run2", "--json").stdout)["cells"]
    assert one["position"] == "unknown" and one["instances"] == 8  # each sample its own case
    refused = invoke("import", tmp_path / "other.eval", "--out", tmp_path / "x", "--map", "depth=metadata.d")
    assert_bad_input(refused, "length=... is required")
    assert_bad_input(
        invoke("import", tmp_path / "other.eval", "--out", tmp_path / "x", "--map", "size=id"), "--map"
    )
    assert not (tmp_path / "x").exists()


def test_numeric_scores_are_partial_credit_over_every_sample(tmp_path: Path) -> None:
    """A log scored with numbers (another scorer's, 0.5 and 1): the cell's mean_score is over both
    samples, a score of 1 is correct."""

    def sample(number: int, value: float) -> EvalSample:
        meta = {"task": "niah", "case_id": f"c{number}", "instance_id": f"i{number}", "length": 512,
                "depth": 0.5, "position": "midpoint"}  # fmt: skip
        return EvalSample(id=f"s{number}", epoch=1, input="q", target="a", metadata=meta,
                          scores={"other": Score(value=value)})  # fmt: skip

    spec = EvalSpec(
        created="2026-01-01T00:00:00+00:00", task="t", dataset=EvalDataset(), model="m", config={}
    )
    write_eval_log(
        EvalLog(eval=spec, samples=[sample(1, 0.5), sample(2, 1.0)]), str(tmp_path / "scored.eval")
    )
    assert invoke("import", tmp_path / "scored.eval", "--out", tmp_path / "run").exit_code == 0
    (cell,) = json.loads(invoke("show", tmp_path / "run", "--json").stdout)["cells"]
    assert (cell["position"], cell["n"], cell["correct"]) == ("midpoint", 2, 1)
    assert cell["mean_score"] == pytest.approx(0.75)


def test_an_inspect_log_without_the_extra_is_one_line(
    logs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # an import of it now fails
    result = invoke("import", logs["exported"], "--out", tmp_path / "run")
    assert_bad_input(result, "pip install 'rotscope[inspect]'")
    assert not (tmp_path / "run").exists()
