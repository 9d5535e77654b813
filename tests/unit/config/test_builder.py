"""The experiment a command builds from its options (``rotscope.config.builder``): the command
line's fields over the file's, its section options merged into the file's section, a subjects file's
subjects after the file's own, and a search's budget over its ``search`` section."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rotscope.config.builder import build_experiment, experiment_for_run, with_search_budget
from rotscope.errors import BadInput


def _file(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_the_command_line_s_fields_and_section_options_go_over_the_file_s(tmp_path: Path) -> None:
    path = _file(tmp_path, {"name": "e", "model": "fake/lexical", "seed": 3, "remote": {"timeout_s": 7.0}})
    experiment = build_experiment(
        path,
        {"seed": 5, "trials": None, "out": "runs/x"},
        {"remote": {"base_url": "http://h:1/v1", "api_key_env": None}, "executor": {"kind": None}},
    )
    assert (experiment.seed, experiment.trials) == (5, 1)
    assert experiment.out == str(Path.cwd() / "runs" / "x")  # relative to here, not to the file
    dumped = experiment.model_dump(mode="json")
    assert dumped["remote"]["timeout_s"] == 7.0 and dumped["remote"]["base_url"] == "http://h:1/v1"
    assert experiment.executor == build_experiment(path, {}).executor


def test_a_section_that_is_no_mapping_is_bad_input(tmp_path: Path) -> None:
    path = _file(tmp_path, {"model": "fake/lexical", "remote": "x"})
    with pytest.raises(BadInput, match=r"field 'remote' must be a mapping"):
        build_experiment(path, {}, {"remote": {"base_url": "http://h:1/v1"}})


def test_a_subjects_file_adds_its_subjects(tmp_path: Path) -> None:
    path = _file(tmp_path, {"model": "fake/lexical"})
    subjects = tmp_path / "subjects.yaml"
    subjects.write_text(
        yaml.safe_dump({"subjects": [{"name": "a", "model": "fake/lexical"}]}), encoding="utf-8"
    )
    assert [subject.name for subject in experiment_for_run(path, {}, None, subjects).subjects] == ["a"]
    assert experiment_for_run(path, {}).subjects == []


def test_a_search_budget_goes_over_the_search_section_only_when_given(tmp_path: Path) -> None:
    path = _file(tmp_path, {"model": "fake/lexical", "search": {"range": [256, 4096]}})
    experiment = build_experiment(path, {})
    assert with_search_budget(experiment, None, None, str(path)) is experiment
    budgeted = with_search_budget(experiment, 40, None, str(path))
    assert budgeted.search is not None and budgeted.search.max_calls == 40
    assert set(budgeted.model_dump(exclude_unset=True)) == set(experiment.model_dump(exclude_unset=True))
    plain = build_experiment(_file(tmp_path, {"model": "fake/lexical"}), {})
    assert with_search_budget(plain, 40, None, str(path)) is plain
