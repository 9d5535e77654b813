"""A paired session (``rotscope run CONFIG --pair BASELINE,CANDIDATE --out DIR``): both subjects in
one session, written as two ordinary run folders, ``DIR/baseline`` and ``DIR/candidate``.

Both are planned from the same experiment, so every (case, length, position, trial) has the same
decoding seed in both (``generation.seed`` + trial). Their calls go in one seeded interleaving:
rounds of one group of each subject in a seeded order (``schedule.paired_rounds``), a group being a
run of prefix-sharing prompts for a local engine (its KV cache reuse survives) and, for a remote
API, a block of as many calls as its provider takes at once in its seeded shuffle. All batches run on
one event loop with one set of provider limits. Provider drift over time then falls on both
subjects alike instead of passing for a difference between them. Both folders record the pair and
the joint order, group by group (meta ``pair.order``: [subject, [call ids]]); ``DIR`` holds
``pair.json``, and ``--resume DIR`` continues both in the same order.

The session is one unit from its first byte: ``pair.json`` is written before either subject is
planned, holding the experiment and the subjects' models as resolved then (a path is made absolute
once, so a resume from another folder names the same files), with ``planned: false`` until both
subjects' rows are stored. A session stopped while planning (no call made yet) is planned again by
``--resume DIR``; a subject folder never resumes on its own (``runner`` refuses it by name).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Mapping
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
from rotscope.execution.state.run_folder import PAIR_FILE, writing
from rotscope.execution.workflows.dry_run import DryRun, dry_run
from rotscope.execution.workflows.planned import refuse_nothing_to_measure
from rotscope.execution.workflows.run_steps import RunSteps, open_run_steps
from rotscope.execution.workflows.runner import BudgetReached, resumed_config, stops
from rotscope.modes.intended import intended_by, upgrade_line
from rotscope.plan.schedule import paired_rounds, trie_runs
from rotscope.store import RunStore
from rotscope.types import Backend, WorkItem

SUBJECTS = ("baseline", "candidate")
SHARED_SEEDS = "generation.seed + trial, the same for both subjects in every (case, length, position, trial)"


def parse_pair(value: str) -> tuple[str, str]:
    """``BASELINE,CANDIDATE`` as two subject names or model names (``rotscope.config.subjects``)."""
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise BadInput(f"--pair: {value!r} is not BASELINE,CANDIDATE (subject names or models)")
    return parts[0], parts[1]  # the same twice is an A/A session: what an unchanged release must PASS


def run_pair(
    config: ExperimentConfig,
    models: tuple[str, str],
    out: Path,
    *,
    reporter: Reporter | None = None,
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
    backends: Mapping[str, Backend] | None = None,
) -> Path:
    """Run ``config`` for both models in one interleaved session into ``out``; returns ``out``.

    Against ``frozen_plan`` the candidate may differ in its subject (the point of the pair); any
    other deviation of either is bad input unless ``allow_deviation``."""
    if is_pair(out):
        raise BadInput(
            f"out: {out} holds a paired session already; continue it with rotscope run --resume {out}"
        )
    if out.exists() and (not out.is_dir() or any(path.name != LOCK_FILE for path in out.iterdir())):
        raise BadInput(f"out: {out} is not empty and holds no paired session; choose another --out")
    record: dict[str, Any] = {
        "subjects": {
            role: resolve_paths({"model": model}, Path.cwd())["model"]
            for role, model in zip(SUBJECTS, models, strict=True)
        },
        "seed": config.seed,
        "seeds": SHARED_SEEDS,
        "planned": False,
        "experiment": config.model_dump(mode="json"),
        "frozen_plan": frozen_plan,
        "allow_deviation": allow_deviation,
    }
    with writing(out):  # the session's own lock, held over both subjects' folders
        _write_record(out, record)
        try:
            return _run(_configs(record, out), out, False, reporter, frozen_plan, allow_deviation, backends)
        except BadInput:
            if not _read_record(out).get("planned", True):
                (out / PAIR_FILE).unlink()  # a refused pair leaves nothing behind, as a refused run does
            raise


def pair_dry_run(
    config: ExperimentConfig,
    models: tuple[str, str],
    *,
    frozen_plan: dict[str, Any] | None = None,
    allow_deviation: bool = False,
) -> dict[str, DryRun]:
    """Each subject's dry run, as ``run_pair`` would plan it: no model is called and nothing is
    written (no ``--out`` folder is made); a deviation from ``frozen_plan`` is refused as the
    session would refuse it."""
    experiment = config.model_dump(mode="json")
    planned = {}
    for role, model in zip(SUBJECTS, models, strict=True):
        resolved = resolve_subject(build_config(experiment, "--pair"), model, f"--pair {role}")
        subject = build_config(resolved.model_dump(), f"--pair {role}")
        intended = intended_by(subject, frozen_plan, role)
        planned[role] = dry_run(subject, frozen_plan, allow_deviation, intended)
    return planned


def is_pair(folder: Path) -> bool:
    return (folder / PAIR_FILE).is_file()


def resume_pair(
    out: Path,
    *,
    reporter: Reporter | None = None,
    max_cost: float | None = None,
    use_cache: bool = True,
    backends: Mapping[str, Backend] | None = None,
) -> Path:
    """Continue a paired session: both folders, finished calls skipped, in the stored joint order;
    one stopped before both subjects were stored is planned again (no call was made yet)."""
    with writing(out):
        record = _read_record(out)
        if not record.get("planned", True):
            if max_cost is not None:
                record["experiment"]["max_cost"] = max_cost
            if not use_cache:
                record["experiment"]["cache"] = {**record["experiment"].get("cache", {}), "enabled": False}
            _write_record(out, record)
            for role in SUBJECTS:  # what planning left: calls start only once both are stored
                shutil.rmtree(out / role, ignore_errors=True)
            frozen = record.get("frozen_plan")
            allow = bool(record.get("allow_deviation", False))
            return _run(_configs(record, out), out, False, reporter, frozen, allow, backends)
        configs = {role: resumed_config(out / role, max_cost, use_cache) for role in SUBJECTS}
        return _run(configs, out, True, reporter, None, False, backends)


def _configs(record: Mapping[str, Any], out: Path) -> dict[str, ExperimentConfig]:
    """Each subject's experiment: the session's with the subject's overrides (``rotscope.config.subjects``:
    a subject name or a model) and its folder."""
    folder = out.absolute()
    experiment = build_config(record["experiment"], "--pair")
    configs = {}
    for role in SUBJECTS:
        resolved = resolve_subject(experiment, record["subjects"][role], f"--pair {role}")
        configs[role] = build_config({**resolved.model_dump(), "out": str(folder / role)}, f"--pair {role}")
    return configs


def _read_record(out: Path) -> dict[str, Any]:
    try:
        record = json.loads((out / PAIR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadInput(f"{out / PAIR_FILE}: not a paired session's record ({error})") from None
    if not isinstance(record, dict) or not isinstance(record.get("subjects"), dict):
        raise BadInput(f"{out / PAIR_FILE}: not a paired session's record (no subjects)")
    _check_record(out / PAIR_FILE, record)
    return record


def _check_record(path: Path, record: Mapping[str, Any]) -> None:
    """Every field a resume reads, of the type it was written with: a hand-edited ``pair.json`` is
    bad input naming the field, never a KeyError deep in the resume."""
    subjects = record["subjects"]
    for role in SUBJECTS:
        if not isinstance(subjects.get(role), str) or not subjects[role]:
            raise BadInput(f"{path}: subjects.{role} must be the subject's name or model, a string")
    if not isinstance(record.get("planned", True), bool):
        raise BadInput(f"{path}: planned must be true or false")
    if record.get("planned", True):
        return
    if not isinstance(record.get("experiment"), dict):
        raise BadInput(f"{path}: a paired session stopped while planning, without its experiment")
    if not isinstance(record["experiment"].get("cache", {}), dict):
        raise BadInput(f"{path}: experiment.cache must be a mapping")
    if record.get("frozen_plan") is not None and not isinstance(record["frozen_plan"], dict):
        raise BadInput(f"{path}: frozen_plan must be a plan (a mapping) or null")
    if not isinstance(record.get("allow_deviation", False), bool):
        raise BadInput(f"{path}: allow_deviation must be true or false")


def _write_record(out: Path, record: Mapping[str, Any]) -> None:
    """``pair.json`` replaced whole (a temporary file renamed over it), never seen half written."""
    partial = out / f".{PAIR_FILE}.partial"
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(record, indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, out / PAIR_FILE)


def _run(
    configs: Mapping[str, ExperimentConfig],
    out: Path,
    resume: bool,
    reporter: Reporter | None,
    frozen_plan: Mapping[str, Any] | None,
    allow_deviation: bool,
    backends: Mapping[str, Backend] | None,
) -> Path:
    with ExitStack() as stack:
        for role in SUBJECTS:
            stack.enter_context(writing(out / role))
            if resume:
                RunStore.open_existing(out / role).close()  # a readable run store, migrated under the lock
        subjects_steps: dict[str, RunSteps] = {}
        try:
            for role in SUBJECTS:
                subjects_steps[role] = open_run_steps(
                    configs[role],
                    out / role,
                    resume=resume,
                    reporter=reporter,
                    backend=(backends or {}).get(role),
                )
                plan = subjects_steps[role].prepare(
                    frozen_plan, allow_deviation, intended_by(configs[role], frozen_plan, role)
                )
                if not resume:
                    refuse_nothing_to_measure(plan, configs[role])
            upgraded = upgrade_line(frozen_plan)
            if upgraded is not None and reporter is not None:
                reporter.notice(upgraded)
            order = joint_order(subjects_steps, configs["baseline"].seed)
            meta = {
                "subjects": {role: configs[role].model for role in SUBJECTS},
                "names": {role: configs[role].subject for role in SUBJECTS},
                "folder": str(out.resolve()),
                "seed": configs["baseline"].seed,
                "seeds": SHARED_SEEDS,
                "grouping": {role: _grouping(steps) for role, steps in subjects_steps.items()},
                "order": [[role, [item.item_id for item in group]] for role, group in order],
                **({} if upgraded is None else {"accepted_upgrade": upgraded}),
            }
            for role, steps in subjects_steps.items():
                steps.open(
                    [item for owner, group in order if owner == role for item in group],
                    {"pair": {**meta, "role": role}},
                    described=f"paired with the other subject: {_grouping(steps)}, rounds in seeded order "
                    f"(seed {meta['seed']})",
                )
            _write_record(out, {**_read_record(out), "planned": True, "names": meta["names"]})
            with stops(out, list(subjects_steps.values())):
                stopped = _execute(subjects_steps, order, reporter)
                for role, steps in subjects_steps.items():
                    if stopped is None and steps.rerun_other_mode():
                        stopped = role
                if stopped is None:
                    for steps in subjects_steps.values():
                        steps.cache_checks()
            if stopped is not None and configs[stopped].max_cost is not None:
                counts = [steps.progress() for steps in subjects_steps.values()]
                spent = sum(steps.opened().spent() for steps in subjects_steps.values())  # one budget
                max_cost = configs[stopped].max_cost or 0.0
                raise BudgetReached(
                    out, sum(c[0] for c in counts), sum(c[1] for c in counts), spent, max_cost
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
    """Both subjects' calls as (subject, group) in one seeded interleaving of their groups."""
    groups: dict[str, list[list[WorkItem]]] = {}
    for role, steps in subjects_steps.items():
        items = steps.plan.items
        if steps.local:
            groups[role] = [
                [items[i] for i in run] for run in trie_runs([item.prompt.token_ids for item in items])
            ]
        else:
            ordered = execution_order(items, False, seed, steps.config.order).items
            size = steps.concurrency()
            groups[role] = [ordered[start : start + size] for start in range(0, len(ordered), size)]
    rounds = paired_rounds((len(groups[SUBJECTS[0]]), len(groups[SUBJECTS[1]])), seed)
    return [(SUBJECTS[subject], groups[SUBJECTS[subject]][number]) for subject, number in rounds]


def _execute(
    subjects_steps: Mapping[str, RunSteps], order: list[tuple[str, list[WorkItem]]], reporter: Reporter | None
) -> str | None:
    """Every call still to make, group by group in the joint order; the subject whose budget
    stopped it, else ``None``."""
    todo = {role: steps.todo() for role, steps in subjects_steps.items()}
    batches = [(role, [item for item in group if item.item_id in todo[role]]) for role, group in order]
    batches = [(role, batch) for role, batch in batches if batch]
    if reporter is not None:
        calls = [item for _, batch in batches for item in batch]
        reporter.start(len(calls), sum(item.prompt.prompt_tokens for item in calls))

    async def run() -> str | None:
        limiters = Limiters(subjects_steps[SUBJECTS[0]].config.limits)  # one provider's limits hold for both
        # One --max-cost for the session, counted where each call is made, whichever subject's.
        spent = sum(steps.opened().spent() for steps in subjects_steps.values())
        budget = Budget(subjects_steps[SUBJECTS[0]].config.max_cost, spent=spent)
        for role, batch in batches:
            if await subjects_steps[role].execute_on_loop(batch, limiters, budget):
                return role
        return None

    try:
        return asyncio.run(run())
    finally:
        if reporter is not None:
            reporter.finish()
