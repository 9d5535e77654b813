"""One subject's run in steps: plan it (checked against a frozen plan and, on ``--resume``, against
the folder's own run), store its planned rows in a given order, execute calls, finish. A single
run (``runner``) takes the steps one after the other; a paired session (``pair``) plans both
subjects before storing either, so one interleaved order of both can be stored and executed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, build_config, dump_config
from rotscope.config.sections import ProviderLimits
from rotscope.execution.calls.cachecheck import require_clearable, run_cache_checks
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.calls.likelihood import RunScore, run_score
from rotscope.execution.calls.limits import Limiters
from rotscope.execution.executors import builtin as _builtin_executors  # registers the built-in kinds
from rotscope.execution.executors.kinds import Batch, ExecutorKind, executor_for
from rotscope.execution.state.identity import check_identity, config_digest, experiment_identity
from rotscope.execution.state.run_folder import (
    CONFIG_FILE,
    STORE_FILE,
    check_run_dir,
    create_store,
    has_store,
    store_plan,
    write_config,
    write_rejections,
)
from rotscope.execution.workflows.planned import (
    check_plan,
    grid_line,
    planned_line,
    rejection_lines,
    same_corpus,
    same_items,
)
from rotscope.execution.workflows.self_session import SessionWriter, self_written, written_notice
from rotscope.plan.manifest import Deviation, build_manifest, manifest_digest
from rotscope.plan.rejections import REJECTIONS_FILE
from rotscope.plan.schedule import expected_prefill
from rotscope.plan.workitems import Plan, build_plan, without_evidence
from rotscope.run_meta import EngineMeta, EngineVerdict, PlanRecord, SessionGeneration
from rotscope.store import RunStore
from rotscope.types import Backend, Manifest, SpeedReference, WorkItem


def _frozen_with_every_depth(frozen: Mapping[str, Any], plan: Plan) -> bool:
    """Whether ``frozen`` counts more work items than ``plan`` while ``plan`` holds a case without
    evidence planned once per length (``without_evidence``): the plan was frozen when such a case
    ran at every depth and as its own control, and the run keeps that plan unchanged."""
    counted = (frozen.get("planned") or {}).get("work_items")
    return (
        isinstance(counted, int)
        and counted > len(plan.items)
        and any(without_evidence(item.case) for item in plan.items)
    )


def with_executor(
    backend: Backend, config: ExperimentConfig, reporter: Reporter | None
) -> tuple[Backend, ExecutorKind]:
    """The executor of ``backend``'s calls (``executors.kinds.executor_for``: a local engine that can
    run in a worker process gets one, see ``rotscope.execution.executors.worker``; on the Ray
    executor the engine's replicas run on Ray workers instead) and the backend it wraps."""
    executor = executor_for(backend, config)
    return executor.wrap(backend, config, reporter), executor


@dataclass
class RunSteps:
    """One run folder being run: planned, then stored and executed by its caller."""

    config: ExperimentConfig
    run_dir: Path
    backend: Backend
    reporter: Reporter | None
    judge_backend: Backend | None = None
    resume: bool = False
    executor: ExecutorKind = field(default_factory=lambda: _builtin_executors.IN_PROCESS)
    plan: Plan = field(init=False)
    ordered: list[WorkItem] = field(default_factory=list)
    store: RunStore | None = None
    _identity: dict[str, Any] = field(default_factory=dict)
    _manifest: Manifest = field(default_factory=lambda: cast("Manifest", {}))
    _plan_meta: PlanRecord | None = None
    _generation: SessionGeneration | None = None
    _first: bool = True
    score: RunScore = "accuracy"
    """What each row keeps (``likelihood.run_score``), resolved in ``prepare``."""

    @property
    def local(self) -> bool:
        return self.backend.capabilities.local

    def prepare(
        self,
        frozen_plan: Mapping[str, Any] | None,
        allow_deviation: bool,
        intended: Callable[[Deviation], bool] = lambda deviation: False,
    ) -> Plan:
        """Check the folder and the subject's identity, plan and verify every prompt, compare with
        the frozen plan; nothing is written yet."""
        config, run_dir = self.config, self.run_dir
        digest = config_digest(config)
        self.score = run_score(config.score, self.backend)  # refused before any call
        if config.cache_control:
            require_clearable(self.backend)
        self._identity = experiment_identity(config, self.backend.describe())
        self._first = not self.resume or not has_store(run_dir)
        if not self._first:
            with RunStore.open_existing(run_dir) as stored:
                check_identity(stored.meta(), self._identity, digest, str(run_dir / CONFIG_FILE))
        if config.judge is not None and self.judge_backend is None:
            judge_config = {"model": config.judge.model, "remote": config.judge.remote.model_dump()}
            self.judge_backend = create_backend(build_config({**config.model_dump(), **judge_config}))
        writer = SessionWriter(config, run_dir, self.backend, self.reporter) if self_written(config) else None
        self.plan = build_plan(config, self.backend, writer)
        if frozen_plan is not None and _frozen_with_every_depth(frozen_plan, self.plan):
            # frozen before cases without evidence were planned once per length: plan them as it did
            self.plan = build_plan(config, self.backend, writer, evidence_less_once=False)
        if writer is not None:
            self._generation = writer.cost()
            _notice(self.reporter, written_notice(self._generation, writer.calls_made))
        _notice(self.reporter, planned_line(self.plan))
        for line in self.plan.notices:
            _notice(self.reporter, line)
        for line in rejection_lines(self.plan, str(run_dir / REJECTIONS_FILE)):
            _notice(self.reporter, line)
        self._manifest = build_manifest(config, self.plan, self.backend)
        if frozen_plan is not None:
            self._plan_meta = check_plan(frozen_plan, self._manifest, allow_deviation, intended)
        if self.resume:
            same_corpus(run_dir, self.plan.corpus)
            same_items(run_dir, self.plan)
        return self.plan

    def open(
        self, ordered: list[WorkItem], meta: Mapping[str, Any] | None = None, *, described: str
    ) -> RunStore:
        """Write the config and the planned rows in ``ordered`` order (``described`` in the run's
        metadata), then reserve the engine. A new store is written whole before it appears
        (``run_folder.create_store``)."""
        config, run_dir = self.config, self.run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        write_rejections(run_dir, self.plan.rejections)
        self.ordered = ordered

        def fill(store: RunStore) -> None:
            store_plan(store, self.plan, ordered, config, run_dir, config_digest(config), described)
            if self._first or "identity" not in store.meta():
                store.set_meta({"identity": self._identity})  # kept as it began, never rewritten
            store.set_meta({"manifest": self._manifest, "manifest_digest": manifest_digest(self._manifest)})
            if self._plan_meta is not None:
                store.set_meta({"plan": self._plan_meta})
            if self._generation is not None:
                store.set_meta({"session_generation": self._generation})
            if meta:
                store.set_meta(meta)

        if has_store(run_dir):
            write_config(run_dir, dump_config(config))
            self.store = store = RunStore(run_dir / STORE_FILE)
            fill(store)
        else:
            self.store = store = create_store(run_dir, fill, dump_config(config))
        if self.executor.starting is not None:
            _notice(self.reporter, self.executor.starting)
        self.backend.reserve(self.plan.max_prompt_tokens, self.plan.max_reply_tokens)
        store.set_meta({"engine": engine_meta(self.backend, self.executor), "score": self.score})
        return store

    def opened(self) -> RunStore:
        if self.store is None:
            raise RuntimeError("the session's store is not open yet")
        return self.store

    def todo(self) -> set[str]:
        """Calls still to make: unfinished ones and any answered in another engine mode."""
        store = self.opened()
        return store.unfinished() | store.calls_in_other_mode(getattr(self.backend, "engine_mode", None))

    def execute(self, items: Sequence[WorkItem]) -> bool:
        """Run ``items`` (already chosen from ``todo``); True when the budget stopped them."""
        return asyncio.run(self.execute_on_loop(items))

    async def execute_on_loop(
        self, items: Sequence[WorkItem], limiters: Limiters | None = None, budget: Budget | None = None
    ) -> bool:
        """``execute`` on the running event loop, with ``limiters`` and ``budget`` shared with other
        batches (a paired session's subjects spend from one budget)."""
        batch = Batch(
            self.config,
            items,
            self.backend,
            self.judge_backend,
            self.opened(),
            self.reporter,
            limiters,
            budget,
        )
        return await self.executor.execute(batch)

    def concurrency(self) -> int:
        """How many of its calls may be in flight at once: one for a local engine (unless it says
        otherwise), its provider's limit for a remote API."""
        if self.local:
            return self.backend.capabilities.max_concurrency or 1
        provider = str(self.backend.describe().get("backend", ""))
        return self.config.limits.get(provider, ProviderLimits()).concurrency

    def prefill(self, batch: Sequence[WorkItem]) -> dict[str, int]:
        """The prompt tokens each call of ``batch`` should need evaluated in its order: a local engine
        keeps the previous prompt's prefix unless told not to (``prefix_cache: false``); an API is
        counted whole (its cache, if any, is the provider's)."""
        options = self.backend.describe().get("options") or {}
        reuse = self.local and options.get("prefix_cache", True) is not False
        tokens = expected_prefill([item.prompt.token_ids for item in batch], reuse=reuse)
        return {item.item_id: count for item, count in zip(batch, tokens, strict=True)}

    def rerun_other_mode(self) -> bool:
        """Run again any call answered in another engine mode than the engine's now (a crash switched
        it to safe mode mid-run): a run's rows come from one mode. True when the budget stopped it."""
        while True:
            mode = getattr(self.backend, "engine_mode", None)
            todo = self.opened().calls_in_other_mode(mode)
            if not todo:
                return False
            _notice(
                self.reporter, f"running {len(todo)} calls again with {mode}: a run's rows come from one mode"
            )
            if self._batch([item for item in self.ordered if item.item_id in todo]):
                return True

    def _batch(self, batch: Sequence[WorkItem]) -> bool:
        expect = getattr(self.reporter, "expect", None)
        if callable(expect):
            expect(speed_reference(self.backend))
        if self.reporter is not None:
            self.reporter.start(
                len(batch), sum(item.prompt.prompt_tokens for item in batch), self.prefill(batch)
            )
        try:
            return self.execute(batch)
        finally:
            if self.reporter is not None:
                self.reporter.finish()

    def run_all(self) -> bool:
        """Every call still to make, in stored order, then the reruns in one mode."""
        todo = self.todo()
        if todo and self._batch([item for item in self.ordered if item.item_id in todo]):
            return True
        return self.rerun_other_mode()

    def cache_checks(self) -> None:
        """The warm/cold cache controls, after every call of the run is made."""
        if not self.config.cache_control:
            return
        store = self.opened()
        deterministic = self.local and self.config.generation.temperature == 0
        store.set_meta({"cache_control": {"deterministic": deterministic}})
        asyncio.run(
            run_cache_checks(
                self.ordered, self.backend, store, self.config.cache_control_sample, self.config.seed
            )
        )

    def progress(self) -> tuple[int, int]:
        """(calls done, calls planned)."""
        left = len(self.opened().unfinished()) if self.store is not None else len(self.plan.items)
        return len(self.plan.items) - left, len(self.plan.items)

    def close(self) -> None:
        """Record how the engine ran, close the store and the backends."""
        try:
            if self.store is not None:
                self.store.set_meta({"engine": engine_meta(self.backend, self.executor)})
                self.store.close()
        finally:
            self.backend.close()
            if self.judge_backend is not None:
                self.judge_backend.close()


def open_run_steps(
    config: ExperimentConfig,
    run_dir: Path,
    *,
    resume: bool,
    reporter: Reporter | None,
    backend: Backend | None = None,
    judge_backend: Backend | None = None,
) -> RunSteps:
    """A run's steps with its backend made (in a worker process where the engine can have one), once
    the folder is known to be new or this run's own."""
    check_run_dir(run_dir, config_digest(config), resume)
    _notice(reporter, f"planning {config.name}: model {config.model}; {grid_line(config)}")
    made, executor = with_executor(backend or create_backend(config), config, reporter)
    return RunSteps(
        config, run_dir, made, reporter, judge_backend=judge_backend, resume=resume, executor=executor
    )


def engine_meta(backend: Backend, executor: ExecutorKind) -> EngineMeta | None:
    """How a local engine ran: its mode, why, its settings (llama.cpp: threads, from where, and
    batch size), and how often its worker crashed."""
    mode = getattr(backend, "engine_mode", None)
    if mode is None:
        return None
    engine = getattr(backend, "engine", backend)
    verdict = getattr(engine, "verdict", None)
    return {
        "mode": mode,
        "settings": getattr(engine, "engine_settings", None),
        "worker_process": executor.worker_process,
        "crashes": getattr(backend, "crashes", 0),
        "verdict": None if verdict is None else cast(EngineVerdict, asdict(verdict)),
    }


def speed_reference(backend: Backend) -> SpeedReference | None:
    """The prefill speed ``backend``'s engine should reach (``speed_reference()`` of a local engine, or
    of the engine inside its worker process), for the run's slow-machine notice; ``None`` elsewhere."""
    for candidate in (backend, getattr(backend, "engine", None)):
        read = getattr(candidate, "speed_reference", None)
        if callable(read):
            found = read()
            return found if isinstance(found, SpeedReference) else None
    return None


def _notice(reporter: Reporter | None, message: str) -> None:
    if reporter is not None:
        reporter.notice(message)


__all__ = ["RunSteps", "engine_meta", "open_run_steps"]
