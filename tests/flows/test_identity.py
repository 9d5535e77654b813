"""An experiment keeps its identity on resume: an edited identity field in ``DIR/config.yaml`` is
refused naming it, runtime fields may change, and old run folders still resume."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.execution.state.identity import check_identity, config_digest, experiment_identity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
DESCRIPTION = {
    "backend": "llamacpp",
    "model_digest": "aaaa",
    "tokenizer_digest": "bbbb",
    "template_digest": "cc",
}


@pytest.fixture()
def run_dir(tmp_path: Path, corpus: Path) -> Path:
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        "\n".join(
            [
                "model: fake/lexical",
                "tasks: [niah]",
                "limit: 2",
                "lengths: [200, 300]",
                "depths: [0.0, 1.0]",
                f"filler: {{kind: text, glob: '{corpus}/*.txt'}}",
                "prices: {fake/lexical: {input: 3.0, output: 15.0}}",
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def edit(run_dir: Path, **changes: Any) -> None:
    path = run_dir / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        target = data
        for parent in parents:
            target = target[parent]
        target[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def items(run_dir: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        return list(db.execute("SELECT item_id, status, attempts, response FROM items ORDER BY item_id"))


@pytest.mark.parametrize(
    ("change", "field", "old", "new"),
    [
        ({"model": "fake/lexical-recent"}, "model", '"fake/lexical"', '"fake/lexical-recent"'),
        ({"lengths": [200, 400]}, "lengths", "[200, 300]", "[200, 400]"),
        ({"seed": 7}, "seed", "0", "7"),
        ({"generation__max_tokens": 64}, "generation.max_tokens", "null", "64"),  # unset: per kind
        ({"llamacpp__n_batch": 512}, "llamacpp.n_batch", "256", "512"),
    ],
)
def test_a_changed_identity_field_is_refused_naming_it(
    run_dir: Path, change: dict[str, Any], field: str, old: str, new: str
) -> None:
    before = items(run_dir)
    edit(run_dir, **change)
    result = CliRunner().invoke(app, ["run", "--resume", str(run_dir)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert f"{field} changed from {old} to {new}" in message, message
    assert message.count("rotscope:") == 1 and "Traceback" not in result.output
    assert items(run_dir) == before


@pytest.mark.parametrize(
    "change",
    [
        {"max_cost": 5.0},
        {"max_error_rate": 0.5},
        {"cache__enabled": False},
        {"llamacpp__n_threads": 3},
        {"llamacpp__prefix_cache": False},
        {"llamacpp__state_cache_mb": 64},
    ],
)
def test_runtime_fields_may_change_on_resume(run_dir: Path, change: dict[str, Any]) -> None:
    edit(run_dir, **change)
    result = CliRunner().invoke(app, ["run", "--resume", str(run_dir)])
    assert result.exit_code == 0, result.output


def test_a_new_budget_on_the_command_line_is_accepted_and_the_identity_is_kept(run_dir: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--max-cost", "3"])
    assert result.exit_code == 0, result.output
    edit(run_dir, seed=1)  # the identity stored at the first run still rules after a resume
    refused = CliRunner().invoke(app, ["run", "--resume", str(run_dir)])
    assert refused.exit_code == 2 and "seed changed from 0 to 1" in " ".join(refused.stderr.split())


def test_another_model_file_behind_the_same_config_is_refused() -> None:
    config = build_config({"model": "llamacpp/model.gguf"})
    stored = {"identity": experiment_identity(config, DESCRIPTION)}
    check_identity(stored, experiment_identity(config, DESCRIPTION), config_digest(config), "DIR")
    replaced = {**DESCRIPTION, "model_digest": "dddd"}
    with pytest.raises(BadInput, match=r'digests\.model changed from "aaaa" to "dddd"'):
        check_identity(stored, experiment_identity(config, replaced), config_digest(config), "DIR")


def test_an_open_mapping_gaining_a_key_is_a_change() -> None:
    config = build_config({"model": "fake/lexical"})
    tuned = build_config({"model": "fake/lexical", "remote": {"params": {"top_p": 0.5}}})
    stored = {"identity": experiment_identity(config, {})}
    with pytest.raises(BadInput, match=r"remote\.params\.top_p changed from \(not set\) to 0.5"):
        check_identity(stored, experiment_identity(tuned, {}), config_digest(tuned), "DIR")


@pytest.fixture()
def old_run(tmp_path: Path) -> Path:
    """A copy of a run folder written before identities were stored (the store may migrate it)."""
    return Path(shutil.copytree(FIXTURES / "v1-lexical", tmp_path / "old"))


def test_an_old_run_of_the_bundled_model_still_resumes(tmp_path: Path, bundled_path: Path) -> None:
    """The quick experiment run before identities were stored (commit a945638): its prompts plan
    again to the same items, so a finished run resumes with nothing run again."""
    old = Path(shutil.copytree(FIXTURES / "v1-quick-bundled", tmp_path / "quick"))
    before = items(old)
    result = CliRunner().invoke(app, ["run", "--resume", str(old)])
    assert result.exit_code == 0, result.output
    assert items(old) == before  # finished: nothing ran again


def test_an_old_run_whose_prompts_cannot_be_planned_again_is_refused(old_run: Path) -> None:
    """The fake tokenizer's ids changed since this run (fake-regex-2): resuming would add a second
    set of items to the folder, so it is refused in one line and the rows stay as they were."""
    before = items(old_run)
    result = CliRunner().invoke(app, ["run", "--resume", str(old_run)])
    assert result.exit_code == 2, result.output
    assert "cannot be planned again" in " ".join(result.stderr.split())
    assert items(old_run) == before


def test_an_old_run_folder_refuses_an_edited_config(old_run: Path) -> None:
    edit(old_run, lengths=[256, 1024])
    result = CliRunner().invoke(app, ["run", "--resume", str(old_run)])
    assert result.exit_code == 2, result.output
    assert "lengths changed from [256, 512] to [256, 1024]" in " ".join(result.stderr.split())
