"""Subjects: what a release changes, named once in the experiment file (``subjects:``) and chosen by
name where a command takes a subject (``run --pair A,B``; later the N-subject session and the canary).

A subject is a model and the overrides it carries over the experiment's settings: a system prompt,
a chat template, engine options (``llamacpp.n_batch``...). Resolving one gives the config of its run
folder: the overrides applied, ``subject`` set to its name and ``subjects`` reduced to its own
definition, so the folder's config (and with it its identity, ``execution.state.identity``) holds its own
overrides and not another subject's. A plain model name stays a model name: the experiment's own
settings with that model. The cases, grid, seeds, decoding and gate are never a subject's: both
sides of a pair get the same items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rotscope.config.experiment import (
    BUNDLED_MODEL,
    ExperimentConfig,
    SubjectConfig,
    build_config,
    read_config_file,
)
from rotscope.errors import BadInput


def looks_like_model(value: str) -> bool:
    """A model name as ``model:`` takes it (``provider/NAME``, a path with a suffix, ``bundled``);
    a subject's name never does (``config_assembly.SUBJECT_NAME``)."""
    return value == BUNDLED_MODEL or "/" in value or bool(Path(value).suffix)


def find_subject(config: ExperimentConfig, name: str) -> SubjectConfig | None:
    return next((subject for subject in config.subjects if subject.name == name), None)


def unknown_subject(config: ExperimentConfig, name: str, where: str) -> BadInput:
    defined = ", ".join(subject.name for subject in config.subjects)
    listed = f"defined subjects: {defined}" if defined else "the experiment defines no subjects:"
    return BadInput(
        f"{where}: unknown subject {name!r} ({listed}); or give a model as provider/NAME or a path"
    )


def apply_subject(config: ExperimentConfig, subject: SubjectConfig, where: str) -> ExperimentConfig:
    """``config`` as ``subject``'s run: its overrides over the experiment's settings (engine
    sections key by key), ``subject`` set, ``subjects`` its own definition alone."""
    data = config.model_dump(mode="json")
    for key, value in subject.overrides().items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    data["subjects"] = [subject.model_dump(mode="json")]
    data["subject"] = subject.name
    return build_config(data, where)


def resolve_subject(config: ExperimentConfig, spec: str, where: str) -> ExperimentConfig:
    """The run config of ``spec``: a subject's name (its overrides applied), else a plain model
    name (the experiment's own settings with that model, no subject); an unknown name is bad input
    naming it and the subjects defined."""
    subject = find_subject(config, spec)
    if subject is not None:
        return apply_subject(config, subject, where)
    if not looks_like_model(spec):
        raise unknown_subject(config, spec, where)
    data: dict[str, Any] = {**config.model_dump(mode="json"), "model": spec, "subjects": [], "subject": None}
    return build_config(data, where)


def subject_label(config: ExperimentConfig) -> str:
    """How a run's subject is shown: ``name (model)``, or the model alone."""
    return f"{config.subject} ({config.model})" if config.subject else config.model


def read_subjects_file(path: Path) -> list[dict[str, Any]]:
    """The subjects of a file holding ``subjects:`` alone (``run --subjects FILE``), their paths
    resolved against the file's folder; bad input naming the file for anything else."""
    data = read_config_file(path)
    if set(data) != {"subjects"} or not isinstance(data["subjects"], list):
        raise BadInput(f"{path}: a subjects file holds one key, subjects: a list of subjects")
    return list(data["subjects"])


def with_subjects(config: ExperimentConfig, subjects: list[dict[str, Any]], where: str) -> ExperimentConfig:
    """``config`` with ``subjects`` defined after its own (a name defined twice is bad input)."""
    data = config.model_dump(mode="json", exclude_unset=True)  # what was left unset stays so
    data["subjects"] = [*(subject.model_dump(mode="json") for subject in config.subjects), *subjects]
    return build_config(data, where)
