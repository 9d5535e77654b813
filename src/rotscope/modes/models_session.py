"""A session of N subjects (``rotscope run CONFIG --models A,B,C --out DIR``): every subject in one
interleaved session on one plan, written as one ordinary run folder per subject, ``DIR/<subject>``
(the subject's name made filesystem-safe: ``fake/lexical`` -> ``fake-lexical``), beside the session's
own record ``DIR/session.json`` and nothing else.

Every subject is planned from the same experiment, so every (case, length, position, trial) has the
same decoding seed in all (``generation.seed`` + trial); subjects sharing a tokenizer get identical
prompts, the others the same cases and layouts re-rendered and re-verified by their own tokenizer
(the record and the summary say which). Calls go in seeded rounds (``schedule.subject_rounds``):
each round one group of every subject, in a seeded order, a group being a run of prefix-sharing
prompts for a local engine (each subject has its own engine worker, so its KV cache reuse survives)
and, for a remote API, a block of as many calls as its provider takes at once. One event loop, one
set of provider limits and one ``--max-cost`` for the whole session. ``--resume DIR`` continues all
subjects in the stored order; a subject folder never resumes on its own (``runner`` refuses it).

``--pair`` keeps its own module (``pair``, two roles ``baseline``/``candidate`` that the gate
reads); this is the same design for any number of subjects, beside it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig, build_config, resolve_paths
from rotscope.config.subjects import resolve_subject
from rotscope.errors import BadInput
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.calls.limits import Limiters
from rotscope.execution.calls.order import execution_order
from rotscope.execution.state.lock import LOCK_FILE
from rotscope.execution.state.run_folder import writing
from rotscope.execution.workflows.dry_run import DryRun, dry_run
from rotscope.execution.workflows.planned import refuse_nothing_to_measure
from rotscope.execution.workflows.run_steps import RunSteps, open_run_steps
from rotscope.execution.workflows.runner import BudgetReached, resumed_config, stops
from rotscope.plan.schedule import subject_rounds, trie_runs
from rotscope.store import RunStore
from rotscope.types import WorkItem

SESSION_FILE = "session.json"
"""A --models session's record, in the session folder above its subjects' run folders."""
SHARED_SEEDS = "generation.seed + trial, the same for every subject in every (case, length, position, trial)"
IDENTICAL = "identical prompts, token for token (the subjects share tokenizer, template and system prompt)"
RERENDERED = (
    "the same cases and layouts, re-rendered and re-verified per subject (their tokenizer, template or "
    "system prompt differ)"
)


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
    names = [name if name != SESSION_FILE else f"{name}-run" for name in names]
    if len(set(names)) != len(names):
        raise BadInput(
            f"--models: {', '.join(subjects)} give the same folder name twice ({', '.join(names)})"
        )
    return names


def is_models_session(folder: Path) -> bool:
    return (folder / SESSION_FILE).is_file()


def _resolved(config: ExperimentConfig, subject: str) -> ExperimentConfig:
    resolved = resolve_subject(
        build_config(config.model_dump(mode="json"), "--models"), subject, f"--models {subject}"
    )
    return build_config(resolved.model_dump(), f"--models {subject}")


def models_dry_run(config: ExperimentConfig, subjects: Sequence[str]) -> dict[str, DryRun]:
    """Each subject's dry run, as ``run_models`` would plan it: nothing is called or written."""
    names = folder_names(subjects)
    return {
        name: dry_run(_resolved(config, subject), None, False)
        for name, subject in zip(names, subjects, strict=True)
    }


def run_models(
    config: ExperimentConfig, subjects: Sequence[str], out: Path, *, reporter: Reporter | None = None
) -> Path:
    """Run ``config`` for every subject in one interleaved session into ``out``; returns ``out``."""
    if is_models_session(out):
        raise BadInput(
            f"out: {out} holds a --models session already; continue it with rotscope run --resume {out}"
        )
    if out.exists() and (not out.is_dir() or any(path.name != LOCK_FILE for path in out.iterdir())):
        raise BadInput(f"out: {out} is not empty and holds no --models session; choose another --out")
    names = folder_names(subjects)
    for subject in subjects:
        _resolved(config, subject)  # an unknown subject is refused before anything is written
    record: dict[str, Any] = {
        "subjects": [
            [name, resolve_paths({"model": subject}, Path.cwd())["model"]]
            for name, subject in zip(names, subjects, strict=True)
        ],
        "seed": config.seed,
        "seeds": SHARED_SEEDS,
        "planned": False,
        "experiment": config.model_dump(mode="json"),
    }
    with writing(out):  # the session's own lock, held over all subjects' folders
        _write_record(out, record)
        try:
            return _run(_configs(record, out), out, False, reporter)
        except BadInput:
            if not _read_record(out).get("planned", True):
                (out / SESSION_FILE).unlink()  # a refused session leaves nothing behind
            raise


def resume_models(
    out: Path, *, reporter: Reporter | None = None, max_cost: float | None = None, use_cache: bool = True
) -> Path:
    """Continue a --models session: every folder, finished calls skipped, in the stored order; one
    stopped before all subjects were stored is planned again (no call was made yet)."""
    with writing(out):
        record = _read_record(out)
        names = [name for name, _ in record["subjects"]]
        if not record.get("planned", True):
            if max_cost is not None:
                record["experiment"]["max_cost"] = max_cost
            if not use_cache:
                record["experiment"]["cache"] = {**record["experiment"].get("cache", {}), "enabled": False}
            _write_record(out, record)
            for name in names:
                shutil.rmtree(out / name, ignore_errors=True)
            return _run(_configs(record, out), out, False, reporter)
        configs = {name: resumed_config(out / name, max_cost, use_cache) for name in names}
        return _run(configs, out, True, reporter)


def session_subjects(out: Path) -> list[str]:
    """The folder names of a session's subjects, in the order given."""
    return [name for name, _ in _read_record(out)["subjects"]]


def session_prompts(out: Path) -> str:
    """How the session's prompts relate across subjects (``IDENTICAL`` or ``RERENDERED``)."""
    return str(_read_record(out).get("prompts", ""))


def _configs(record: Mapping[str, Any], out: Path) -> dict[str, ExperimentConfig]:
    folder = out.absolute()
    experiment = build_config(record["experiment"], "--models")
    configs = {}
    for name, subject in record["subjects"]:
        resolved = resolve_subject(experiment, subject, f"--models {subject}")
        configs[name] = build_config(
            {**resolved.model_dump(), "out": str(folder / name)}, f"--models {subject}"
        )
    return configs


def _read_record(out: Path) -> dict[str, Any]:
    path = out / SESSION_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: not a --models session's record ({error})") from None
    subjects = record.get("subjects") if isinstance(record, dict) else None
    if (
        not isinstance(subjects, list)
        or len(subjects) < 2
        or not all(
            isinstance(entry, list) and len(entry) == 2 and all(isinstance(v, str) and v for v in entry)
            for entry in subjects
        )
    ):
        raise BadInput(f"{path}: subjects must be a list of [folder, subject] string pairs, two or more")
    if not isinstance(record.get("planned", True), bool):
        raise BadInput(f"{path}: planned must be true or false")
    if not record.get("planned", True) and not isinstance(record.get("experiment"), dict):
        raise BadInput(f"{path}: a session stopped while planning, without its experiment")
    checked: dict[str, Any] = record
    return checked


def _write_record(out: Path, record: Mapping[str, Any]) -> None:
    """``session.json`` replaced whole (a temporary file renamed over it), never seen half written."""
    partial = out / f".{SESSION_FILE}.partial"
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(record, indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, out / SESSION_FILE)


def _prompts(subjects_steps: Mapping[str, RunSteps]) -> str:
    """Whether every subject got the same prompts, token for token (call ids name the model, so
    the prompts are compared as a whole)."""
    prompts = [
        sorted(tuple(item.prompt.token_ids) for item in steps.plan.items) for steps in subjects_steps.values()
    ]
    return IDENTICAL if all(p == prompts[0] for p in prompts[1:]) else RERENDERED


def _run(configs: Mapping[str, ExperimentConfig], out: Path, resume: bool, reporter: Reporter | None) -> Path:
    names = list(configs)
    first = configs[names[0]]
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(writing(out / name))
            if resume:
                RunStore.open_existing(out / name).close()
        subjects_steps: dict[str, RunSteps] = {}
        try:
            for name in names:
                subjects_steps[name] = open_run_steps(
                    configs[name], out / name, resume=resume, reporter=reporter
                )
                plan = subjects_steps[name].prepare(None, False, lambda deviation: False)
                if not resume:
                    refuse_nothing_to_measure(plan, configs[name])
            order = joint_order(subjects_steps, first.seed)
            prompts = _prompts(subjects_steps)
            meta = {
                "subjects": {name: configs[name].model for name in names},
                "names": {name: configs[name].subject for name in names},
                "folder": str(out.resolve()),
                "seed": first.seed,
                "seeds": SHARED_SEEDS,
                "prompts": prompts,
                "grouping": {name: _grouping(steps) for name, steps in subjects_steps.items()},
                "order": [[name, [item.item_id for item in group]] for name, group in order],
            }
            for name, steps in subjects_steps.items():
                steps.open(
                    [item for owner, group in order if owner == name for item in group],
                    {"session": {**meta, "subject": name}},
                    described=f"one of {len(names)} subjects in seeded rounds: {_grouping(steps)} "
                    f"(seed {meta['seed']})",
                )
            _write_record(out, {**_read_record(out), "planned": True, "prompts": prompts})
            with stops(out, list(subjects_steps.values())):
                stopped = _execute(subjects_steps, order, reporter)
                for name, steps in subjects_steps.items():
                    if stopped is None and steps.rerun_other_mode():
                        stopped = name
                if stopped is None:
                    for steps in subjects_steps.values():
                        steps.cache_checks()
            if stopped is not None and configs[stopped].max_cost is not None:
                counts = [steps.progress() for steps in subjects_steps.values()]
                spent = sum(steps.opened().spent() for steps in subjects_steps.values())
                raise BudgetReached(
                    out,
                    sum(c[0] for c in counts),
                    sum(c[1] for c in counts),
                    spent,
                    configs[stopped].max_cost or 0.0,
                )
        finally:
            for steps in subjects_steps.values():
                steps.close()
    return out


def _grouping(steps: RunSteps) -> str:
    if steps.local:
        return "prefix groups: runs of prompts sharing at least half their tokens (local engine)"
    return "blocks of as many calls as its provider's concurrency, in a seeded shuffle (remote API)"


def joint_order(subjects_steps: Mapping[str, RunSteps], seed: int) -> list[tuple[str, list[WorkItem]]]:
    """Every subject's calls as (subject, group) in seeded rounds of their groups."""
    groups: dict[str, list[list[WorkItem]]] = {}
    for name, steps in subjects_steps.items():
        items = steps.plan.items
        if steps.local:
            groups[name] = [
                [items[i] for i in run] for run in trie_runs([item.prompt.token_ids for item in items])
            ]
        else:
            ordered = execution_order(items, False, seed, steps.config.order).items
            size = steps.concurrency()
            groups[name] = [ordered[start : start + size] for start in range(0, len(ordered), size)]
    names = list(groups)
    rounds = subject_rounds([len(groups[name]) for name in names], seed)
    return [(names[subject], groups[names[subject]][number]) for subject, number in rounds]


def _execute(
    subjects_steps: Mapping[str, RunSteps], order: list[tuple[str, list[WorkItem]]], reporter: Reporter | None
) -> str | None:
    """Every call still to make, group by group in the joint order; the subject whose budget
    stopped it, else ``None``."""
    todo = {name: steps.todo() for name, steps in subjects_steps.items()}
    batches = [(name, [item for item in group if item.item_id in todo[name]]) for name, group in order]
    batches = [(name, batch) for name, batch in batches if batch]
    if reporter is not None:
        calls = [item for _, batch in batches for item in batch]
        reporter.start(len(calls), sum(item.prompt.prompt_tokens for item in calls))
    first = next(iter(subjects_steps.values()))

    async def run() -> str | None:
        limiters = Limiters(first.config.limits)
        spent = sum(steps.opened().spent() for steps in subjects_steps.values())
        budget = Budget(first.config.max_cost, spent=spent)  # one --max-cost for the session
        for name, batch in batches:
            if await subjects_steps[name].execute_on_loop(batch, limiters, budget):
                return name
        return None

    try:
        return asyncio.run(run())
    finally:
        if reporter is not None:
            reporter.finish()
