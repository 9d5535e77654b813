"""Run an experiment into a run folder: plan, store every item as pending, execute, record each
result the moment it arrives. ``--resume`` re-plans from the stored config and runs what is left."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope._util.resume_hint import out_option, resume_command
from rotscope.config.experiment import ExperimentConfig, build_config, read_config_file
from rotscope.errors import BadInput, EngineCrashed
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.calls.order import execution_order
from rotscope.execution.state.identity import before_stop, before_variants
from rotscope.execution.state.run_folder import (
    CONFIG_FILE,
    PAIR_FILE,
    SESSION_DIR,
    SESSION_FILE,
    STORE_FILE,
    creation_cut,
    default_run_dir,
    has_store,
    writing,
)
from rotscope.execution.workflows.planned import refuse_nothing_to_measure
from rotscope.execution.workflows.run_steps import RunSteps, open_run_steps
from rotscope.store import RunStore, imported_note
from rotscope.types import Backend

__all__ = [
    "BudgetReached",
    "EngineStopped",
    "Interrupted",
    "Reporter",
    "execution_order",
    "resume_experiment",
    "run_experiment",
    "stops",
]


@dataclass
class Interrupted(Exception):
    """Ctrl-C during a run: everything finished so far is in the run folder."""

    run_dir: Path
    done: int
    total: int

    def line(self) -> str:
        """What the command line says: what is kept, where, and the command that goes on."""
        return (
            f"interrupted: {self.done} of {self.total} items done and kept in {self.run_dir}; "
            f"continue with: {resume_command(self.run_dir)}"
        )


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
    allow_empty: bool = False,
) -> Path:
    """Run (or, with ``resume``, continue) ``config`` in ``run_dir``; returns the run folder.

    A plan whose every prompt was rejected is bad input (``refuse_nothing_to_measure``) unless
    ``allow_empty`` (a search step, which the search judges itself).

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
            allow_empty=allow_empty,
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
    allow_empty: bool = True,
) -> Path:
    """``run_experiment`` once the caller holds the run folder's lock."""
    steps = open_run_steps(
        config, run_dir, resume=resume, reporter=reporter, backend=backend, judge_backend=judge_backend
    )
    try:
        plan = steps.prepare(frozen_plan, allow_deviation)
        if not resume and not allow_empty:
            refuse_nothing_to_measure(plan, config)
        order = execution_order(plan.items, steps.local, config.seed, config.order)
        steps.open(order.items, described=order.describe())
        with stops(run_dir, [steps]):
            stopped = steps.run_all()
            if not stopped:
                steps.cache_checks()
        if stopped and config.max_cost is not None:
            done, total = steps.progress()
            raise BudgetReached(run_dir, done, total, steps.opened().spent(), config.max_cost)
    finally:
        steps.close()
    return run_dir


@contextmanager
def stops(run_dir: Path, subjects_steps: Sequence[RunSteps]) -> Iterator[None]:
    """Ctrl-C and a repeatedly crashing engine end the run with what each subject's steps finished kept."""

    def progress() -> tuple[int, int]:
        counts = [steps.progress() for steps in subjects_steps]
        return sum(done for done, _ in counts), sum(total for _, total in counts)

    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(run_dir, *progress()) from None
    except EngineCrashed as crashed:
        raise EngineStopped(run_dir, *progress(), str(crashed)) from None


def resume_experiment(
    run_dir: Path,
    *,
    reporter: Reporter | None = None,
    max_cost: float | None = None,
    use_cache: bool = True,
    base_url: str | None = None,
) -> Path:
    """Continue a run folder: same config, finished items skipped, errors retried. ``max_cost``
    replaces the stored budget, ``use_cache=False`` turns the response cache off and ``base_url``
    moves a ``serve/NAME`` run's replicas; each is written back to the folder's config.yaml (none
    changes the experiment's identity)."""
    resumed_config(run_dir, max_cost, use_cache, base_url)  # a run folder, checked before any write
    refuse_pair_subject(run_dir)
    with writing(run_dir):  # the lock first: opening the store may migrate it
        if has_store(run_dir):  # else its creation was cut short: the run starts again
            RunStore.open_existing(run_dir).close()  # a readable run store, or bad input naming it
        config = resumed_config(run_dir, max_cost, use_cache, base_url)
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


def refuse_pair_subject(run_dir: Path) -> None:
    """A subject of a paired session resumes only with its session (its calls are interleaved with
    the other subject's): bad input naming the session folder."""
    pair = None
    if has_store(run_dir):  # a store whose creation was cut short holds no session yet
        with RunStore.read(run_dir) as store:
            meta = store.meta()
            pair = meta.get("pair") or meta.get("session")  # --pair, or a --models session
    session = Path(pair["folder"]) if isinstance(pair, dict) and pair.get("folder") else None
    above = run_dir.absolute().parent
    if session is None and ((above / PAIR_FILE).is_file() or (above / SESSION_FILE).is_file()):
        session = above
    if session is not None:
        raise BadInput(
            f"{run_dir}: one subject of the paired session {session}, which resumes only as a whole: "
            f"{resume_command(session)}"
        )


def resumed_config(
    run_dir: Path, max_cost: float | None, use_cache: bool, base_url: str | None = None
) -> ExperimentConfig:
    """The stored config of a run folder to resume, with a new budget, the cache turned off or a
    ``serve/NAME`` run's replicas moved (``serve.base_url``; bad input for any other model).

    A run folder written before paths were stored resolved holds paths relative to where it ran:
    they are read from the current folder, and a different corpus is refused. A folder whose store
    creation was cut short after its config.yaml was written starts again from that config."""
    cut_short = creation_cut(run_dir) and (run_dir / CONFIG_FILE).is_file()
    if (run_dir / STORE_FILE).exists() and not cut_short:
        # a rotscope run store (not an imported one), checked before anything is written there
        with RunStore.read(run_dir) as store:
            imported = imported_note(store.meta())
        if imported is not None:
            raise BadInput(f"{run_dir}: {imported}: there is nothing to resume")
    elif not cut_short:
        if (run_dir / SESSION_DIR).is_dir():
            raise BadInput(
                f"{run_dir}: the run stopped while the model was writing its session (no run.db yet); "
                f"run the same command again with {out_option(run_dir)} to continue it"
            )
        if creation_cut(run_dir):
            raise BadInput(
                f"{run_dir}: the run stopped while its store was being created (no run.db yet); "
                f"run the same command again with {out_option(run_dir)} to start it again"
            )
        raise BadInput(f"{run_dir}: not a run folder (no run.db)")
    path = run_dir / CONFIG_FILE
    config = build_config(before_stop(before_variants(read_config_file(path, Path.cwd()))), str(path))
    changes: dict[str, Any] = {}
    if max_cost is not None:
        changes["max_cost"] = max_cost
    if not use_cache:
        changes["cache"] = {**config.cache.model_dump(), "enabled": False}
    if base_url is not None:
        changes.update(_moved_replicas(config, run_dir, base_url))
    if changes:
        config = build_config({**config.model_dump(), **changes}, str(run_dir / CONFIG_FILE))
    return config


def _moved_replicas(config: ExperimentConfig, run_dir: Path, base_url: str) -> dict[str, Any]:
    """The ``serve:`` section of a resumed ``serve/NAME`` run with its replicas at ``base_url``, by
    its key (where the replicas are never changes an answer, so the run's identity stays); bad
    input for a run of any other model, whose server is part of its config."""
    from rotscope import registry
    from rotscope.backends.serve.backend import PROVIDER
    from rotscope.backends.serve.options import ServeOptions

    if config.model.split("/", 1)[0] != PROVIDER:
        raise BadInput(
            f"--resume --base-url: {run_dir} runs {config.model}, not a {PROVIDER}/NAME model; only "
            "the replicas of a serve/NAME run may move (its server is in its config.yaml)"
        )
    key = next(name for name, item in registry.sections().items() if item.model is ServeOptions)
    return {key: {**config.section(ServeOptions).model_dump(), "base_url": base_url}}
