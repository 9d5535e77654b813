"""The experiment a command builds from its options: the experiment file (or the quick experiment)
with the command line's fields over it, a subjects file's subjects, and a search's budget. The
command line parses; ``rotscope.modes.dispatch`` chooses the mode and calls this first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rotscope.config.experiment import (
    ExperimentConfig,
    build_config,
    quick_config_data,
    read_config_file,
    resolve_paths,
)
from rotscope.config.subjects import read_subjects_file, with_subjects
from rotscope.errors import BadInput

QUICK_SOURCE = "quick experiment"
"""How errors name the source of an experiment built without a file."""


def build_experiment(
    config_path: Path | None,
    overrides: Mapping[str, object],
    sections: Mapping[str, Mapping[str, object]] | None = None,
) -> ExperimentConfig:
    """The experiment: the file (or the quick experiment) with the command line's fields (``None``:
    not given), and its options of a section (``remote``, ``executor``) merged into the file's
    section. A path on the command line is relative to the working folder, not the file's."""
    data = read_config_file(config_path) if config_path else quick_config_data()
    given = {key: value for key, value in overrides.items() if value is not None}
    data.update(resolve_paths(given, Path.cwd()))
    for name, options in (sections or {}).items():
        set_options = {key: value for key, value in options.items() if value is not None}
        if not set_options:
            continue
        section = data.get(name) or {}
        if not isinstance(section, dict):
            raise BadInput(f"{config_path}: field {name!r} must be a mapping")
        data[name] = {**section, **set_options}
    return build_config(data, str(config_path) if config_path else QUICK_SOURCE)


def experiment_for_run(
    config_path: Path | None,
    overrides: Mapping[str, object],
    sections: Mapping[str, Mapping[str, object]] | None = None,
    subjects_file: Path | None = None,
) -> ExperimentConfig:
    """``build_experiment``, with the subjects of ``subjects_file`` (``run --subjects``) when given."""
    experiment = build_experiment(config_path, overrides, sections)
    if subjects_file is None:
        return experiment
    return with_subjects(experiment, read_subjects_file(subjects_file), str(subjects_file))


def with_search_budget(
    experiment: ExperimentConfig, max_calls: int | None, max_tokens: int | None, source: str
) -> ExperimentConfig:
    """A search's experiment with the command line's budget (``--max-calls``, ``--max-tokens``) over
    its ``search`` section; the fields the file left unset stay unset (the search resolves them).
    Unchanged without a ``search`` section or a budget."""
    budget = {"max_calls": max_calls, "max_tokens": max_tokens}
    given = {key: value for key, value in budget.items() if value}
    if experiment.search is None or not given:
        return experiment
    changed = {**experiment.search.model_dump(), **given}
    return build_config({**experiment.model_dump(mode="json", exclude_unset=True), "search": changed}, source)
