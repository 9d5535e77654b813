"""Run an experiment into a run folder: plan, store every item as pending, execute, record each
result the moment it arrives. ``--resume`` re-plans from the stored config and runs what is left."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rotscope.backends import create_backend
from rotscope.config import ExperimentConfig, build_config, dump_config, load_config
from rotscope.errors import BadInput, EngineCrashed
from rotscope.execution.cachecheck import require_clearable, run_cache_checks
from rotscope.execution.execute import Reporter, execute_items
from rotscope.execution.identity import check_identity, config_digest, experiment_identity
from rotscope.execution.order import execution_order
from rotscope.execution.run_folder import (
    CONFIG_FILE,
    STORE_FILE,
    check_run_dir,
    default_run_dir,
    store_plan,
    writing,
)
from rotscope.execution.worker import WorkerBackend
from rotscope.plan.manifest import build_manifest, deviations, manifest_digest
from rotscope.plan.workitems import Plan, build_plan
from rotscope.store import RunStore
from rotscope.types import Backend, WorkItem

__all__ = [
    "BudgetReached",
    "EngineStopped",
    "Interrupted",
    "Reporter",
    "execution_order",
    "resume_experiment",
    "run_experiment",
]


@dataclass
class Interrupted(Exception):
    """Ctrl-C during a run: everything finished so far is in the run folder."""

    run_dir: Path
    done: int
    total: int


@dataclass
class BudgetReached(Exception):
    """``max_cost`` stopped the run before a call that could exceed it; finished work is kept."""

    run_dir: Path
    done: int
    total: int
    spent: float
    max_cost: float


@dataclass
class EngineStopped(Exception):
    """The local engine crashed repeatedly; finished work is kept and ``--resume`` goes on."""

    run_dir: Path
    done: int
    total: int
    reason: str


def in_worker(backend: Backend, config: ExperimentConfig, reporter: Reporter | None) -> Backend:
    """A local engine that can run in a worker process gets one (see ``rotscope.execution.worker``)."""
    if config.executor.kind == "inprocess" or not backend.capabilities.worker_process:
        return backend
    notice = reporter.notice if reporter is not None else None
    return WorkerBackend(backend, max_crashes=config.executor.max_crashes, notice=notice)


def check_plan(
    frozen: Mapping[str, Any], manifest: Mapping[str, Any], allow_deviation: bool
) -> dict[str, Any]:
    """Compare a run's manifest with the frozen plan: a deviation is bad input unless allowed,
    and then each one is recorded. Returns the run's ``plan`` metadata."""
    found = deviations(frozen, manifest)
    digest = manifest_digest(frozen)
    if found and not allow_deviation:
        raise BadInput(
            f"plan {digest}: the run deviates at {found[0].describe()}"
            f"{f' (and {len(found) - 1} more fields)' if len(found) > 1 else ''}; "
            "rerun with --allow-deviation to run it and record the deviations"
        )
    return {
        "digest": digest,
        "deviations": [
            {"field": item.field, "planned": item.planned, "actual": item.actual} for item in found
        ],
    }


def run_experiment(
    config: ExperimentConfig,
    *,
    run_dir: Path | None = None,
    resume: bool = False,
    reporter: Reporter | None = None,
    backend: Backend | None = None,
    judge_backend: Backend | None = None,
    frozen_plan: Mapping[str, Any] | None = None,
    allow_deviation: bool = False,
) -> Path:
    """Run (or, with ``resume``, continue) ``config`` in ``run_dir``; returns the run folder.

    With ``frozen_plan`` (a manifest from ``rotscope plan``) a run that deviates from it is bad
    input, unless ``allow_deviation``, which runs it and records every deviation.
    Raises ``Interrupted`` on Ctrl-C and ``BudgetReached`` when ``max_cost`` stops it, with all
    finished items stored either way. The run holds the folder's lock throughout: a second run or
    resume of the same folder meanwhile is refused (``RunFolderLocked``); a resume of another
    experiment than the folder's is bad input naming the changed field.
    """
    run_dir = run_dir or (Path(config.out) if config.out else default_run_dir(config))
    with writing(run_dir):
        return _run_locked(
            config,
            run_dir,
            resume=resume,
            reporter=reporter,
            backend=backend,
            judge_backend=judge_backend,
            frozen_plan=frozen_plan,
            allow_deviation=allow_deviation,
        )


def _run_locked(
    config: ExperimentConfig,
    run_dir: Path,
    *,
    resume: bool,
    reporter: Reporter | None,
    backend: Backend | None,
    judge_backend: Backend | None,
    frozen_plan: Mapping[str, Any] | None,
    allow_deviation: bool,
) -> Path:
    """``run_experiment`` once the caller holds the run folder's lock."""
    digest = config_digest(config)
    check_run_dir(run_dir, digest, resume)
    _notice(reporter, f"planning {config.name}: model {config.model}; {_grid_line(config)}")
    backend = in_worker(backend or create_backend(config), config, reporter)
    try:
        if config.cache_control:
            require_clearable(backend)
        identity = experiment_identity(config, backend.describe())
        first = not resume or not (run_dir / STORE_FILE).is_file()
        if not first:
            with RunStore.open_existing(run_dir) as stored:
                check_identity(stored.meta(), identity, digest, str(run_dir / CONFIG_FILE))
        if config.judge is not None and judge_backend is None:
            judge_config = {"model": config.judge.model, "remote": config.judge.remote.model_dump()}
            judge_backend = create_backend(build_config({**config.model_dump(), **judge_config}))
        plan = build_plan(config, backend)
        _notice(reporter, planned_line(plan))
        manifest = build_manifest(config, plan, backend)
        plan_meta = check_plan(frozen_plan, manifest, allow_deviation) if frozen_plan is not None else None
        if resume:
            _same_corpus(run_dir, plan.corpus)
            _same_items(run_dir, plan)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / CONFIG_FILE).write_text(dump_config(config), encoding="utf-8")
        store = RunStore(run_dir / "run.db")
        try:
            local = backend.capabilities.local
            order = execution_order(plan.items, local, config.seed, config.order)
            ordered = order.items
            store_plan(store, plan, ordered, config, run_dir, digest, order.describe())
            if first or "identity" not in store.meta():
                store.set_meta({"identity": identity})  # kept as it began, never rewritten
            store.set_meta({"manifest": manifest, "manifest_digest": manifest_digest(manifest)})
            if plan_meta is not None:
                store.set_meta({"plan": plan_meta})
            if isinstance(backend, WorkerBackend):
                _notice(reporter, "starting the engine in a worker process (a crash there is an error row)")
            backend.reserve(plan.max_prompt_tokens, config.generation.max_tokens)
            store.set_meta({"engine": engine_meta(backend)})
            try:
                stopped = _execute(config, ordered, backend, judge_backend, store, reporter)
                if config.cache_control and not stopped:
                    deterministic = local and config.generation.temperature == 0
                    store.set_meta({"cache_control": {"deterministic": deterministic}})
                    asyncio.run(
                        run_cache_checks(ordered, backend, store, config.cache_control_sample, config.seed)
                    )
            except KeyboardInterrupt:
                left = len(store.unfinished())
                raise Interrupted(run_dir, len(plan.items) - left, len(plan.items)) from None
            except EngineCrashed as crashed:
                left = len(store.unfinished())
                raise EngineStopped(run_dir, len(plan.items) - left, len(plan.items), str(crashed)) from None
            finally:
                store.set_meta({"engine": engine_meta(backend)})
            if stopped and config.max_cost is not None:
                left = len(store.unfinished())
                raise BudgetReached(
                    run_dir, len(plan.items) - left, len(plan.items), store.spent(), config.max_cost
                )
        finally:
            store.close()
    finally:
        backend.close()
        if judge_backend is not None:
            judge_backend.close()
    return run_dir


def _same_items(run_dir: Path, plan: Plan) -> None:
    """On ``--resume``, the re-planned work items must be the run's own: an item id hashes the
    exact prompt ids, so a tokenizer, template or prompt builder that changed since the run began
    would otherwise add a second experiment's items to the folder."""
    if not (run_dir / "run.db").exists():
        return
    with RunStore.open_existing(run_dir) as store:
        stored = store.calls()
    if not stored:
        return
    planned = {item.item_id for item in plan.items}
    if planned != stored:
        raise BadInput(
            f"--resume {run_dir}: {len(stored - planned)} of the run's {len(stored)} prompts cannot be "
            f"planned again and {len(planned - stored)} planned prompts are not the run's (the "
            "tokenizer, template or prompt code changed since it ran); start a new run folder"
        )


def _same_corpus(run_dir: Path, corpus: Mapping[str, Any]) -> None:
    """On ``--resume``, the re-planned filler corpus must be the one the run's rows were made from
    (its digest in the run's metadata): a corpus that changed (files edited, or a path that now
    names other files) is refused before anything runs, never mixed into the run."""
    if not (run_dir / "run.db").exists():
        return
    with RunStore.open_existing(run_dir) as store:
        stored = store.meta().get("corpus") or {}
    checks = [(stored.get("source"), stored.get("digest"), corpus.get("digest"))]
    checks += [
        (task, before.get("digest"), (corpus.get(task) or {}).get("digest"))
        for task, before in stored.items()
        if isinstance(before, dict)
    ]
    for source, before, now in checks:
        if before is not None and before != now:
            raise BadInput(
                f"--resume {run_dir}: filler {source} has digest {now} now, but the run was made with "
                f"digest {before}; restore that corpus or start a new run"
            )


def _execute(
    config: ExperimentConfig,
    ordered: Sequence[WorkItem],
    backend: Backend,
    judge_backend: Backend | None,
    store: RunStore,
    reporter: Reporter | None,
) -> bool:
    """Run every unfinished call, then again any call answered in another engine mode than the
    engine's now (a crash switched it to safe mode mid-run, or an earlier session ran in another
    mode): a run's rows come from one mode. True when the budget stopped it."""
    todo = store.unfinished() | store.calls_in_other_mode(getattr(backend, "engine_mode", None))
    while todo:
        batch = [item for item in ordered if item.item_id in todo]
        if reporter is not None:
            reporter.start(len(batch), sum(item.prompt.prompt_tokens for item in batch))
        try:
            if asyncio.run(execute_items(config, batch, backend, judge_backend, store, reporter)):
                return True
        finally:
            if reporter is not None:
                reporter.finish()
        mode = getattr(backend, "engine_mode", None)  # a crash may have switched it during the batch
        todo = store.calls_in_other_mode(mode)
        if todo:
            _notice(reporter, f"running {len(todo)} calls again with {mode}: a run's rows come from one mode")
    return False


def engine_meta(backend: Backend) -> dict[str, Any] | None:
    """How a local engine ran: its mode, why, and how often its worker crashed."""
    mode = getattr(backend, "engine_mode", None)
    if mode is None:
        return None
    engine = getattr(backend, "engine", backend)
    verdict = getattr(engine, "verdict", None)
    return {
        "mode": mode,
        "worker_process": isinstance(backend, WorkerBackend),
        "crashes": getattr(backend, "crashes", 0),
        "verdict": None if verdict is None else asdict(verdict),
    }


def _notice(reporter: Reporter | None, message: str) -> None:
    if reporter is not None:
        reporter.notice(message)


def _grid_line(config: ExperimentConfig) -> str:
    depths = ", ".join(str(depth) for depth in config.depths)
    return (
        f"tasks {', '.join(config.tasks)}; lengths {', '.join(f'{n:,}' for n in config.lengths)} tokens; "
        f"depths {depths}; {config.trials} trial(s)"
    )


def planned_line(plan: Plan) -> str:
    """What the verifier passed: calls, distinct prompts, rejections and the tokens to evaluate."""
    cases = {(item.case.task, item.case.case_id) for item in plan.items}
    line = (
        f"planned {len(plan.items)} calls ({len(cases)} cases and controls), "
        f"{len({item.prompt.token_ids for item in plan.items})} distinct prompts verified, "
        f"{len(plan.rejected)} rejected; prompt tokens {plan.naive_prefill:,} "
        f"(distinct prefixes {plan.lower_bound:,})"
    )
    if plan.rejected:
        line += f"; first rejection: {plan.rejected[0]}"
    return line


def resume_experiment(
    run_dir: Path,
    *,
    reporter: Reporter | None = None,
    max_cost: float | None = None,
    use_cache: bool = True,
) -> Path:
    """Continue a run folder: same config, finished items skipped, errors retried. ``max_cost``
    replaces the stored budget and ``use_cache=False`` turns the response cache off; both are
    written back to the folder's config.yaml (neither changes the experiment's identity)."""
    if not (run_dir / STORE_FILE).is_file():
        raise BadInput(f"{run_dir}: not a run folder (no run.db)")
    RunStore.read(run_dir).close()  # a rotscope run store, checked before anything is written there
    with writing(run_dir):  # the lock first: opening the store may migrate it
        RunStore.open_existing(run_dir).close()  # a readable run store, or bad input naming it
        # A run folder written before paths were stored resolved holds paths relative to where it
        # ran: they are read from the current folder, and a different corpus is refused.
        config = load_config(run_dir / CONFIG_FILE, paths_from=Path.cwd())
        changes: dict[str, Any] = {}
        if max_cost is not None:
            changes["max_cost"] = max_cost
        if not use_cache:
            changes["cache"] = {**config.cache.model_dump(), "enabled": False}
        if changes:
            config = build_config({**config.model_dump(), **changes}, str(run_dir / CONFIG_FILE))
        return _run_locked(
            config,
            run_dir,
            resume=True,
            reporter=reporter,
            backend=None,
            judge_backend=None,
            frozen_plan=None,
            allow_deviation=False,
        )
