"""Inspect AI integration: rotscope tasks run inside Inspect offline with exact spans in the sample
metadata, the rotscope model provider counts with the model's tokenizer, and a run exported as an
Inspect log has one sample per work item and the accuracies of ``rotscope show --json``."""

from __future__ import annotations

import asyncio
import importlib
import json
import socket
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.backends.fake import FakeTokenizer
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.integrations.inspect.verified import remember
from rotscope.store import RunStore
from rotscope.types import RenderedPrompt
from tests.support.cli_helpers import assert_bad_input, invoke, valve_corpus

inspect_ai = pytest.importorskip("inspect_ai")
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network and no tiktoken cache: a token count through tiktoken's o200k_base (Inspect's
    default, downloaded on first use) would fail here; logs go to the test's folder."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-tiktoken-cache"))
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))


def _experiment_file(folder: Path, **fields: Any) -> Path:
    corpus = valve_corpus(folder / "corpus")
    data = {"limit": 2, "filler": {"kind": "text", "glob": str(corpus / "*.txt")}, **fields}
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _entry_point_module() -> str:
    """The module pyproject declares for Inspect's entry point group, imported as Inspect would."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module: str = declared["project"]["entry-points"]["inspect_ai"]["rotscope"]
    importlib.import_module(module)
    return module


def test_inspect_eval_of_rotscope_niah_writes_a_log_with_exact_spans(tmp_path: Path) -> None:
    _entry_point_module()
    config = _experiment_file(tmp_path)
    logs = inspect_ai.eval(
        "rotscope/niah",
        task_args={"lengths": "256,512", "config": str(config)},
        model="rotscope/fake/lexical",
        limit=4,
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    assert logs[0].location.startswith(str(tmp_path / "logs"))
    log = read_eval_log(logs[0].location)
    assert log.samples is not None and len(log.samples) == 4
    assert log.eval.metadata is not None and log.eval.metadata["tokenizer"] == "fake:regex"
    assert "exact for a model with this tokenizer only" in log.eval.metadata["spans"]
    tokenizer = FakeTokenizer()
    for sample in log.samples:
        meta = sample.metadata
        assert meta["length"] in (256, 512) and meta["tokenizer_digest"] == tokenizer.digest()
        assert sample.output.metadata is not None and sample.output.metadata["prompt_ids"] == "verified"
        assert sample.scores is not None and sample.scores["deterministic"].value == "C"
        if meta["control"]:
            assert meta["spans"] == []
            continue
        (span,) = meta["spans"]
        messages = [{"role": m.role, "content": m.text} for m in sample.input if not isinstance(m, str)]
        ids = tokenizer.encode(tokenizer.render_chat(messages), special=True)
        assert len(ids) == meta["prompt_tokens"]
        needle = tokenizer.decode(ids[span["token_start"] : span["token_end"]])
        assert meta["expected"] in needle, (needle, meta["expected"])  # the span is the needle
    metrics = log.results.scores[0].metrics if log.results else {}
    cells = {sample.metadata["cell"] for sample in log.samples}
    assert {f"accuracy {cell}" for cell in cells} <= set(metrics)
    assert metrics["stderr"].params == {"cluster": "instance_id"}


def test_provider_counts_tokens_with_the_models_tokenizer() -> None:
    _entry_point_module()
    model = inspect_ai.model.get_model("rotscope/fake/lexical")
    text = "The access code for the Vellmoor archive is 4817."
    counted = asyncio.run(model.api.count_text_tokens(text))
    assert counted == FakeTokenizer().count(text) > 0


def test_a_verified_prompt_gets_its_work_items_budget_unless_inspect_gives_one() -> None:
    _entry_point_module()
    model = inspect_ai.model.get_model("rotscope/fake/lexical")
    messages = [inspect_ai.model.ChatMessageUser(content="How many valves? Answer: <number>")]
    tokenizer = model.api.tokenizer
    text = tokenizer.render_chat([{"role": "user", "content": messages[0].text}])
    ids = tuple(tokenizer.encode(text, special=True))
    remember(RenderedPrompt((), text, ids, (), 0, "", tokenizer_digest=tokenizer.digest()), 256)
    request, verified = model.api.request(messages, inspect_ai.model.GenerateConfig())
    assert verified and request.params.max_tokens == 256  # its answer kind's, as a run sends it
    given, _ = model.api.request(messages, inspect_ai.model.GenerateConfig(max_tokens=12))
    assert given.params.max_tokens == 12


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """niah (the fake finds every needle) and nolima (it finds none): accuracies of 1 and 0."""
    root = tmp_path_factory.mktemp("inspect-export")
    corpus = valve_corpus(root / "corpus")
    config = build_config(
        {
            "name": "export",
            "model": "fake/lexical",
            "tasks": ["niah", "nolima"],
            "lengths": [200, 300],
            "depths": [0.0, 1.0],
            "limit": 2,
            "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
        }
    )
    return run_experiment(config, run_dir=root / "run")


def _exported(run_dir: Path, tmp_path: Path) -> EvalLog:
    target = tmp_path / "run.eval"
    result = invoke("export", run_dir, "--format", "inspect", "-o", target)
    assert result.exit_code == 0, result.output
    return read_eval_log(str(target))


def test_export_has_one_sample_per_work_item_with_messages_reply_and_score(
    run_dir: Path, tmp_path: Path
) -> None:
    log = _exported(run_dir, tmp_path)
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        sent = {row["item_id"]: store.prompt_messages(row["prompt_digest"]) for row in rows}
    assert log.samples is not None
    assert sorted(str(sample.id) for sample in log.samples) == sorted(row["item_id"] for row in rows)
    by_id = {row["item_id"]: row for row in rows}
    for sample in log.samples:
        row = by_id[str(sample.id)]
        *asked, reply = sample.messages
        assert [{"role": m.role, "content": m.text} for m in asked] == sent[row["item_id"]]
        assert reply.role == "assistant" and reply.text == row["response"]
        assert sample.scores is not None
        found = sample.scores["deterministic"].metadata
        assert found == {"outcome": row["outcome"], "category": row["category"]}
        assert sample.metadata["spans"] == json.loads(row["spans"])
        assert sample.metadata["instance_id"] == row["instance_id"]


def test_export_has_the_accuracies_of_show_json(run_dir: Path, tmp_path: Path) -> None:
    log = _exported(run_dir, tmp_path)
    shown = invoke("show", run_dir, "--json")
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    metrics = log.results.scores[0].metrics if log.results else {}
    assert log.samples is not None
    scored: dict[str, list[bool]] = defaultdict(list)
    for sample in log.samples:
        if sample.scores is not None:
            scored[sample.metadata["cell"]].append(sample.scores["deterministic"].value == "C")
    accuracies = set()
    for cell in summary["cells"]:
        label = f"{cell['task']} {cell['length']} {cell['depth']:g}"
        assert metrics[f"accuracy {label}"].value == pytest.approx(cell["accuracy"])
        assert sum(scored[label]) / len(scored[label]) == pytest.approx(cell["accuracy"])
        accuracies.add(cell["accuracy"])
    assert accuracies == {0.0, 1.0}  # niah found, nolima not: the comparison can tell them apart


def test_export_inspect_needs_output_file(run_dir: Path) -> None:
    assert_bad_input(invoke("export", run_dir, "--format", "inspect"), "-o FILE.eval")


def test_export_inspect_without_the_extra_is_one_line(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # an import of it now fails
    result = invoke("export", run_dir, "--format", "inspect", "-o", tmp_path / "run.eval")
    assert_bad_input(result, "pip install 'rotscope[inspect]'")
    assert not (tmp_path / "run.eval").exists()


def test_the_cli_never_imports_inspect() -> None:
    code = (
        "import sys; from typer.testing import CliRunner; from rotscope.cli import app; "
        "CliRunner().invoke(app, ['models']); print('inspect_ai' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


@pytest.mark.integration
def test_bundled_model_runs_inside_inspect_on_the_verified_ids(tmp_path: Path) -> None:
    """The real engine behind ``--model rotscope/bundled``: it is sent the verified ids, and the
    prompt tokens it reports are the sample's own count (the spans' tokenizer is the model's)."""
    _entry_point_module()
    config = _experiment_file(tmp_path, limit=1, depths=["end"])
    logs = inspect_ai.eval(
        "rotscope/niah",
        task_args={"lengths": "256", "config": str(config)},
        model="rotscope/bundled",
        limit=2,
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    log = read_eval_log(logs[0].location)
    assert log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        assert sample.output.metadata is not None and sample.output.metadata["prompt_ids"] == "verified"
        assert sample.output.usage is not None
        usage = sample.output.usage  # the engine's prefix cache may hold part of the prompt
        assert usage.input_tokens + (usage.input_tokens_cache_read or 0) == sample.metadata["prompt_tokens"]
        assert sample.metadata["tokenizer_model"] == "bundled"
        assert sample.scores is not None and sample.scores["deterministic"].value in ("C", "I", "N")
