"""A session of N subjects (``rotscope run CONFIG --models A,B,C --out DIR``): every subject in one
interleaved session on one plan, written as one ordinary run folder per subject, ``DIR/<folder>``
(the subject's name made filesystem-safe: ``fake/lexical`` -> ``fake-lexical``), beside the session's
own record ``DIR/session.json`` (``session_record``) and nothing else. ``--pair`` is its two-subject
form (``pair``): folders ``baseline`` and ``candidate``, optionally under a frozen plan.

Every subject is planned from the same experiment, so every (case, length, position, trial) has the
same decoding seed in all (``generation.seed`` + trial); subjects sharing a tokenizer get identical
prompts, the others the same cases and layouts re-rendered and re-verified by their own tokenizer
(the record and the summary say which). Calls go in seeded rounds (``schedule.subject_rounds``; a
pair's stored order is ``schedule.paired_rounds``): each round one group of every subject, in a
seeded order, a group being a run of prefix-sharing prompts for a local engine (each subject has its
own engine worker, so its KV cache reuse survives) and, for a remote API, a block of as many calls
as its provider takes at once. One event loop, one set of provider limits and one ``--max-cost`` for
the whole session. ``--resume DIR`` continues all subjects in the stored order; a subject folder
never resumes on its own (``runner`` refuses it).

The session is one unit from its first byte: ``session.json`` is written before any subject is
planned, holding the experiment and the subjects' models as resolved then (a path is made absolute
once, so a resume from another folder names the same files), with ``planned: false`` until every
subject's rows are stored; a session stopped while planning (no call made yet) is planned again by
``--resume DIR``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rotscope._util.inside import inside
from rotscope._util.resume_hint import resume_command
from rotscope.config.experiment import ExperimentConfig, build_config, resolve_paths
from rotscope.config.subjects import resolve_subject
from rotscope.errors import BadInput
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.state.lock import LOCK_FILE
from rotscope.execution.state.run_folder import PAIR_FILE, SESSION_FILE, writing
from rotscope.execution.workflows.dry_run import DryRun, dry_run
from rotscope.execution.workflows.runner import resumed_config
from rotscope.modes.intended import intended_by
from rotscope.modes.session_record import (
    Kind,
    SessionRecord,
    is_session,
    read_record,
    remove_record,
    write_record,
)
from rotscope.modes.session_run import FORMS, IDENTICAL, RERENDERED, run_session
from rotscope.types import Backend

__all__ = [
    "IDENTICAL",
    "RERENDERED",
    "SESSION_FILE",
    "folder_names",
    "is_models_session",
    "models_dry_run",
    "parse_models",
    "resume_models",
    "run_models",
    "session_kind",
    "session_prompts",
    "session_subjects",
]


def parse_models(value: str) -> list[str]:
    """``A,B,C`` as two or more distinct subject names or model names."""
    parts = [part.strip() for part in value.split(",")]
    if len(parts) < 2 or not all(parts):
        raise BadInput(f"--models: {value!r} is not A,B[,C...] (two or more subject names or models)")
    if len(set(parts)) != len(parts):
        raise BadInput(f"--models: {value!r} names a subject twice")
    return parts


def folder_name(subject: str) -> str:
    """A subject's name as a folder name: every run of characters outside ``[A-Za-z0-9._-]``
    becomes one ``-`` (``fake/lexical`` -> ``fake-lexical``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", subject).strip("-.")
    return name or "subject"


def folder_names(subjects: Sequence[str]) -> list[str]:
    """Each subject's folder; two subjects whose safe names collide are bad input."""
    names = [folder_name(Path(s).name if "/" in s and Path(s).suffix else s) for s in subjects]
    names = [name if name not in (SESSION_FILE, PAIR_FILE) else f"{name}-run" for name in names]
    if len(set(names)) != len(names):
        raise BadInput(
            f"--models: {', '.join(subjects)} give the same folder name twice ({', '.join(names)})"
        )
    return names


def is_models_session(folder: Path) -> bool:
    """Whether ``folder`` holds a session of either form (``--models`` or ``--pair``)."""
    return is_session(folder)


def session_kind(folder: Path) -> Kind | None:
    """A session folder's form, ``None`` for a folder that holds no session."""
    return read_record(folder).kind if is_session(folder) else None


def subject_config(config: ExperimentConfig, kind: Kind, folder: str, subject: str) -> ExperimentConfig:
    """The experiment of one subject: the session's with its overrides (``rotscope.config.subjects``:
    a subject name or a model); an unknown subject is bad input naming the option."""
    form = FORMS[kind]
    experiment = build_config(config.model_dump(mode="json"), form.option)
    resolved = resolve_subject(experiment, subject, form.label(folder, subject))
    return build_config(resolved.model_dump(), form.label(folder, subject))


def session_dry_run(
    config: ExperimentConfig,
    kind: Kind,
    subjects: Sequence[tuple[str, str]],
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
) -> dict[str, DryRun]:
    """Each subject's dry run by folder, as the session would plan it: no model is called and
    nothing is written; a deviation from ``frozen_plan`` is refused as the session would refuse it."""
    frozen = None if frozen_plan is None else dict(frozen_plan)
    planned = {}
    for folder, subject in subjects:
        one = subject_config(config, kind, folder, subject)
        planned[folder] = dry_run(one, frozen, allow_deviation, intended_by(one, frozen, folder))
    return planned


def models_dry_run(config: ExperimentConfig, subjects: Sequence[str]) -> dict[str, DryRun]:
    """Each subject's dry run, as ``run_models`` would plan it: nothing is called or written."""
    return session_dry_run(config, "models", list(zip(folder_names(subjects), subjects, strict=True)))


def start_session(
    config: ExperimentConfig,
    kind: Kind,
    subjects: Sequence[tuple[str, str]],
    out: Path,
    *,
    reporter: Reporter | None = None,
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
    backends: Mapping[str, Backend] | None = None,
) -> Path:
    """Run ``config`` for every (folder, subject) in one interleaved session into ``out``; returns
    ``out``. Against ``frozen_plan`` (a pair's) the candidate may differ in its subject (the point
    of the pair); any other deviation is bad input unless ``allow_deviation``."""
    words = FORMS[kind].words
    try:
        held = read_record(out).kind if is_session(out) else None
    except BadInput:
        held = kind  # a damaged record: its resume names what is wrong with it
    if held == kind:
        raise BadInput(f"out: {out} holds {words} already; continue it with {resume_command(out)}")
    if out.exists() and (not out.is_dir() or any(path.name != LOCK_FILE for path in out.iterdir())):
        raise BadInput(
            f"out: {out} is not empty and holds no {words.removeprefix('a ')}; choose another --out"
        )
    for folder, subject in subjects:
        subject_config(config, kind, folder, subject)  # an unknown subject is refused before any write
    record = SessionRecord(
        kind=kind,
        subjects=[
            [folder, resolve_paths({"model": subject}, Path.cwd())["model"]] for folder, subject in subjects
        ],
        seed=config.seed,
        seeds=FORMS[kind].seeds,
        planned=False,
        experiment=config.model_dump(mode="json"),
        frozen_plan=None if frozen_plan is None else dict(frozen_plan),
        allow_deviation=allow_deviation,
    )
    with writing(out):  # the session's own lock, held over all subjects' folders
        write_record(out, record)
        try:
            return run_session(record, _configs(record, out), out, False, reporter, backends)
        except BadInput:
            if not read_record(out).planned:
                remove_record(out)  # a refused session leaves nothing behind, as a refused run does
            raise


def run_models(
    config: ExperimentConfig, subjects: Sequence[str], out: Path, *, reporter: Reporter | None = None
) -> Path:
    """Run ``config`` for every subject in one interleaved session into ``out``; returns ``out``."""
    folders = folder_names(subjects)
    return start_session(config, "models", list(zip(folders, subjects, strict=True)), out, reporter=reporter)


def resume_models(
    out: Path,
    *,
    reporter: Reporter | None = None,
    max_cost: float | None = None,
    use_cache: bool = True,
    backends: Mapping[str, Backend] | None = None,
) -> Path:
    """Continue a session of either form: every folder, finished calls skipped, in the stored
    order; one stopped before all subjects were stored is planned again (no call was made yet)."""
    with writing(out):
        record = read_record(out)
        if not record.planned and record.experiment is not None:
            experiment = dict(record.experiment)
            if max_cost is not None:
                experiment["max_cost"] = max_cost
            if not use_cache:
                experiment["cache"] = {**experiment.get("cache", {}), "enabled": False}
            record = record.model_copy(update={"experiment": experiment})
            write_record(out, record)
            for folder in record.folders:  # what planning left: calls start once all are stored
                shutil.rmtree(inside(out, out / folder, what="--resume"), ignore_errors=True)
            return run_session(record, _configs(record, out), out, False, reporter, backends)
        configs = {folder: resumed_config(out / folder, max_cost, use_cache) for folder in record.folders}
        return run_session(record, configs, out, True, reporter, backends)


def session_subjects(out: Path) -> list[str]:
    """The folder names of a session's subjects, in the order given."""
    return read_record(out).folders


def session_prompts(out: Path) -> str:
    """How the session's prompts relate across subjects (``IDENTICAL`` or ``RERENDERED``)."""
    return read_record(out).prompts or ""


def _configs(record: SessionRecord, out: Path) -> dict[str, ExperimentConfig]:
    """Each subject's experiment, from the session's, with its folder."""
    form = FORMS[record.kind]
    experiment = build_config(record.experiment or {}, form.option)
    configs = {}
    for folder, subject in record.subjects:
        label = form.label(folder, subject)
        resolved = resolve_subject(experiment, subject, label)
        configs[folder] = build_config({**resolved.model_dump(), "out": str(out.absolute() / folder)}, label)
    return configs
