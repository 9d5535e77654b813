"""A paired session is one unit: it resumes only as a whole (never a subject folder alone), its
paths are stored resolved at the first run, a stop while planning (before any call) resumes, and
``--max-cost`` is one budget over both subjects, reported as their real total."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import rotscope
from rotscope.config.experiment import load_config
from rotscope.execution.workflows import run_steps
from rotscope.execution.workflows.runner import BudgetReached
from rotscope.modes.pair import SUBJECTS, run_pair
from rotscope.store import RunStore
from tests.support.cli_helpers import assert_bad_input, invoke

FAKE_AGENT = Path(__file__).resolve().parents[1] / "fake_agent.py"
SOURCE = Path(rotscope.__file__).resolve().parents[1]
PAIR = ("fake/lexical", "fake/lexical-recent")
GRID: dict[str, Any] = {
    "name": "exp",
    "model": "fake/lexical",
    "tasks": ["niah"],
    "lengths": [256],
    "depths": ["beginning", "end"],
    "limit": 4,
}


def _experiment(folder: Path, **changes: Any) -> Path:
    path = folder / "exp.yaml"
    path.write_text(yaml.safe_dump({**GRID, **changes}), encoding="utf-8")
    return path


def _outcomes(run_dir: Path) -> list[tuple[Any, ...]]:
    with RunStore.read(run_dir) as store:
        return sorted(
            (
                row["case_id"],
                row["length_target"],
                row["position"],
                row["control"],
                row["status"],
                row["outcome"],
            )
            for row in store.rows()
        )


def _spent(run_dir: Path) -> float:
    with RunStore.read(run_dir) as store:
        return store.spent()


def _stop_before_any_subject(root: Path, out: Path) -> None:
    """A pair of ``root``'s experiment into ``out`` stopped once ``session.json`` is written, before
    either subject's folder."""

    class Stop(Exception):
        pass

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise Stop

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rotscope.modes.session_run.open_run_steps", stop)
        with pytest.raises(Stop):
            run_pair(load_config(root / "exp.yaml"), PAIR, out)


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A pair run through without a stop: the rows every resumed session must equal."""
    root = tmp_path_factory.mktemp("whole")
    experiment = _experiment(root)
    result = invoke("run", experiment, "--pair", ",".join(PAIR), "--out", root / "pair")
    assert result.exit_code == 0, result.output
    return root, root / "pair"


def test_a_subject_folder_refuses_to_resume_alone_and_names_its_session(whole: tuple[Path, Path]) -> None:
    _, pair = whole
    before = _outcomes(pair / "baseline")
    line = assert_bad_input(invoke("run", "--resume", pair / "baseline"), "paired session", str(pair))
    assert f"rotscope run --resume {pair}" in line
    assert _outcomes(pair / "baseline") == before


def test_compare_takes_a_pair_folder_as_it_takes_a_models_session(whole: tuple[Path, Path]) -> None:
    _, pair = whole
    together = invoke("compare", pair, "--json")
    apart = invoke("compare", pair / "baseline", pair / "candidate", "--json")
    assert together.exit_code == apart.exit_code == 0, together.output
    assert together.stdout == apart.stdout
    runs = json.loads(together.stdout)["runs"]
    assert [(run["run"], run["model"]) for run in runs] == [("baseline", PAIR[0]), ("candidate", PAIR[1])]


def test_a_pair_stopped_while_planning_resumes_to_the_rows_of_an_unstopped_one(
    whole: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, reference = whole
    out = tmp_path / "pair"
    opened = run_steps.RunSteps.open

    def stop_at_the_candidate(self: run_steps.RunSteps, *args: Any, **kwargs: Any) -> Any:
        if self.run_dir.name == "candidate":
            raise KeyboardInterrupt  # as a kill between the baseline's store and the candidate's
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(run_steps.RunSteps, "open", stop_at_the_candidate)
    with pytest.raises(KeyboardInterrupt):
        run_pair(load_config(root / "exp.yaml"), PAIR, out)
    monkeypatch.undo()
    assert (out / "session.json").is_file() and (out / "baseline" / "run.db").is_file()
    rerun = invoke("run", root / "exp.yaml", "--pair", ",".join(PAIR), "--out", out)
    assert_bad_input(rerun, "holds a paired session already", f"--resume {out}")
    result = invoke("run", "--resume", out)
    assert result.exit_code == 0, result.output
    for role in SUBJECTS:
        assert _outcomes(out / role) == _outcomes(reference / role)


def test_a_pair_stopped_before_any_subject_folder_resumes(whole: tuple[Path, Path], tmp_path: Path) -> None:
    root, reference = whole
    out = tmp_path / "pair"
    _stop_before_any_subject(root, out)
    assert sorted(path.name for path in out.iterdir() if not path.name.startswith(".")) == ["session.json"]
    result = invoke("run", "--resume", out)
    assert result.exit_code == 0, result.output
    for role in SUBJECTS:
        assert _outcomes(out / role) == _outcomes(reference / role)


def test_relative_model_paths_are_stored_resolved_and_the_pair_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    (work / "bin").mkdir(parents=True)
    script = work / "bin" / "lex.sh"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{SOURCE}" exec "{sys.executable}" "{FAKE_AGENT}" "$@"\n')
    script.chmod(0o755)
    experiment = _experiment(work, depths=["end"], limit=1, controls=False)
    monkeypatch.chdir(work)
    result = invoke("run", experiment, "--pair", "fake/lexical,cmd/./bin/lex.sh", "--out", "pair")
    assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)  # resumed from elsewhere: the stored paths still name the same files
    resumed = invoke("run", "--resume", work / "pair")
    assert resumed.exit_code == 0, resumed.output
    with RunStore.read(work / "pair" / "candidate") as store:
        assert store.meta()["pair"]["subjects"]["candidate"] == f"cmd/{script}"


def test_max_cost_is_one_budget_over_both_subjects(tmp_path: Path) -> None:
    models = ("fake-remote/lexical", "fake-remote/lexical-recent")
    prices = {model: {"input": 1.0, "output": 4.0} for model in models}
    settings = {"prices": prices, "cache": {"enabled": False}, "limits": {"fake-remote": {"concurrency": 1}}}
    full = tmp_path / "full"
    run_pair(load_config(_experiment(tmp_path, **settings)), models, full)
    one_subject = _spent(full / "baseline")
    assert one_subject > 0
    budget = one_subject  # half of what the two subjects spend together
    out = tmp_path / "budget"
    with pytest.raises(BudgetReached) as stopped:
        run_pair(load_config(_experiment(tmp_path, **settings, max_cost=budget)), models, out)
    total = sum(_spent(out / role) for role in SUBJECTS)
    assert total <= budget + 1e-12
    assert stopped.value.spent == pytest.approx(total)
    assert all(_spent(out / role) > 0 for role in SUBJECTS)  # both subjects ran, interleaved


def _as_written_before_sessions(out: Path) -> None:
    """``out``'s record as the pair wrote it before it was a two-subject session: ``pair.json``,
    its subjects mapped by role, its keys in their order. The run folders are as they were (the
    session under ``pair`` with each folder's ``role``), so this is the folder today's pairs were."""
    record = json.loads((out / "session.json").read_text(encoding="utf-8"))
    old = {
        "subjects": dict(record["subjects"]),
        "seed": record["seed"],
        "seeds": record["seeds"],
        "planned": record["planned"],
        "experiment": record["experiment"],
        "frozen_plan": record.get("frozen_plan"),
        "allow_deviation": record["allow_deviation"],
        **({"names": record["names"]} if "names" in record else {}),
    }
    (out / "pair.json").write_text(json.dumps(old, indent=2) + "\n", encoding="utf-8")
    (out / "session.json").unlink()


def test_a_pair_folder_written_before_sessions_resumes_gates_shows_and_compares(
    whole: tuple[Path, Path], tmp_path: Path
) -> None:
    root, reference = whole
    out = tmp_path / "pair"
    assert invoke("run", root / "exp.yaml", "--pair", ",".join(PAIR), "--out", out).exit_code == 0
    _as_written_before_sessions(out)
    shown = {role: invoke("show", out / role, "--json") for role in SUBJECTS}
    assert all(result.exit_code == 0 for result in shown.values())
    gated, judged = (
        invoke("gate", "--baseline", folder / "baseline", "--candidate", folder / "candidate", "--json")
        for folder in (out, reference)
    )
    assert gated.exit_code == judged.exit_code, gated.output
    assert json.loads(gated.stdout)["reasons"] == json.loads(judged.stdout)["reasons"]
    compared = invoke("compare", out, "--json")
    assert compared.exit_code == 0, compared.output
    runs = json.loads(compared.stdout)["runs"]
    assert [(run["run"], run["model"]) for run in runs] == [("baseline", PAIR[0]), ("candidate", PAIR[1])]
    line = assert_bad_input(invoke("run", "--resume", out / "candidate"), "paired session")
    assert f"rotscope run --resume {out}" in line
    resumed = invoke("run", "--resume", out)
    assert resumed.exit_code == 0, resumed.output
    assert "paired run folders:" in resumed.stdout
    assert sorted(path.name for path in out.iterdir() if not path.name.startswith(".")) == [
        "baseline",
        "candidate",
        "session.json",
    ]
    for role in SUBJECTS:
        assert _outcomes(out / role) == _outcomes(reference / role)


def test_a_pair_stopped_while_planning_before_sessions_resumes(
    whole: tuple[Path, Path], tmp_path: Path
) -> None:
    root, reference = whole
    out = tmp_path / "pair"
    _stop_before_any_subject(root, out)
    _as_written_before_sessions(out)
    result = invoke("run", "--resume", out)
    assert result.exit_code == 0, result.output
    for role in SUBJECTS:
        assert _outcomes(out / role) == _outcomes(reference / role)


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda record: record["subjects"].pop(), "subjects"),
        (lambda record: record["subjects"][0].__setitem__(1, 7), "subjects.0.1"),
        (lambda record: record["subjects"][1].__setitem__(0, "../candidate"), "not a folder name inside"),
        (lambda record: record.update(planned="no"), "planned"),
        (lambda record: record.pop("experiment"), "without its experiment"),
        (lambda record: record["experiment"].update(cache=["off"]), "experiment.cache"),
        (lambda record: record.update(frozen_plan="plan.json"), "frozen_plan"),
        (lambda record: record.update(allow_deviation="yes"), "allow_deviation"),
        (lambda record: record["experiment"].update(lengths="many"), "lengths"),
    ],
)
def test_a_hand_edited_session_file_is_bad_input_naming_the_field(
    whole: tuple[Path, Path], tmp_path: Path, edit: Any, named: str
) -> None:
    root, _ = whole
    out = tmp_path / "pair"
    _stop_before_any_subject(root, out)
    record = json.loads((out / "session.json").read_text(encoding="utf-8"))
    edit(record)
    (out / "session.json").write_text(json.dumps(record), encoding="utf-8")
    assert_bad_input(invoke("run", "--resume", out), named)


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda record: record["subjects"].pop("candidate"), "subjects.candidate"),
        (lambda record: record["subjects"].update(baseline=7), "subjects.baseline"),
        (lambda record: record.update(planned="no"), "planned"),
        (lambda record: record.pop("experiment"), "without its experiment"),
        (lambda record: record["experiment"].update(cache=["off"]), "experiment.cache"),
        (lambda record: record.update(frozen_plan="plan.json"), "frozen_plan"),
        (lambda record: record.update(allow_deviation="yes"), "allow_deviation"),
        (lambda record: record["experiment"].update(lengths="many"), "lengths"),
    ],
)
def test_a_hand_edited_older_pair_file_is_bad_input_naming_the_field(
    whole: tuple[Path, Path], tmp_path: Path, edit: Any, named: str
) -> None:
    root, _ = whole
    out = tmp_path / "pair"
    _stop_before_any_subject(root, out)
    _as_written_before_sessions(out)
    record = json.loads((out / "pair.json").read_text(encoding="utf-8"))
    edit(record)
    (out / "pair.json").write_text(json.dumps(record), encoding="utf-8")
    assert_bad_input(invoke("run", "--resume", out), named)
