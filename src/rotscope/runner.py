"""Run an experiment into a run folder: plan, store every item as pending, execute, record each
result the moment it arrives. ``--resume`` re-plans from the stored config and runs what is left."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from rotscope import __version__
from rotscope.backends import create_backend
from rotscope.config import ExperimentConfig, dump_config, load_config
from rotscope.errors import BadInput
from rotscope.schedule import prefix_order, shuffled_order
from rotscope.scoring import score_parts
from rotscope.store import RunStore
from rotscope.types import Backend, Completion, GenerateRequest, Score, WorkItem
from rotscope.workitems import Plan, build_plan

CONFIG_FILE = "config.yaml"
LOCAL_BACKENDS = {"llamacpp", "fake"}


class Reporter(Protocol):
    """Receives progress; the CLI draws a bar with it, the library passes none."""

    def start(self, items: int, prompt_tokens: int) -> None: ...

    def advance(self, item: WorkItem, completion: Completion) -> None: ...

    def finish(self) -> None: ...


@dataclass
class Interrupted(Exception):
    """Ctrl-C during a run: everything finished so far is in the run folder."""

    run_dir: Path
    done: int
    total: int


def config_digest(config: ExperimentConfig) -> str:
    """Identity of an experiment: every field except where its results are written."""
    fields = config.model_dump(mode="json", exclude={"out"})
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def default_run_dir(config: ExperimentConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.name}-{stamp}"


def row_id(item: WorkItem, label: str) -> str:
    """The row of one question: the call's id, with the question's label for multi-question prompts."""
    return f"{item.item_id}:{label}" if label else item.item_id


def _planned_rows(item: WorkItem, order: int, run_id: str, backend: str) -> list[dict[str, Any]]:
    """One row per question of the call (a single question is a call of its own)."""
    prompt = item.prompt
    spans = [{**span.__dict__, **_evidence_fields(item, span.evidence_id)} for span in prompt.spans]
    rows = []
    for label, part in item.case.scored_parts():
        prefix = f"{part.case_id}/" if item.case.parts else ""
        rows.append(
            {
                "item_id": row_id(item, label),
                "call_id": item.item_id,
                "run_id": run_id,
                "plan_order": order,
                "task": part.task,
                "case_id": part.case_id,
                "instance_id": item.instance_id,
                "control": int(part.control),
                "model": item.model,
                "backend": backend,
                "length_target": item.layout.length_tokens,
                "prompt_tokens": prompt.prompt_tokens,
                "haystack_tokens": prompt.haystack_tokens,
                "depth": item.layout.depth,
                "position": item.layout.position,
                "spans": json.dumps([span for span in spans if span["evidence_id"].startswith(prefix)]),
                "trial": item.trial,
                "seed": item.params.seed,
                "prompt_digest": _prompt_digest(item),
                "question": part.question,
                "expected": "not in the context" if part.oracle.abstain else part.oracle.answer,
            }
        )
    return rows


def _evidence_fields(item: WorkItem, evidence_id: str) -> dict[str, str]:
    evidence = next(e for e in item.case.evidence if e.evidence_id == evidence_id)
    return {"text": evidence.text, "role": evidence.role}


def _prompt_digest(item: WorkItem) -> str:
    return hashlib.sha256(item.prompt.text.encode("utf-8")).hexdigest()[:24]


def _result_row(completion: Completion, result: Score) -> dict[str, Any]:
    return {
        "status": "error" if result.outcome == "error" else "ok",
        "response": completion.text,
        "outcome": result.outcome,
        "category": result.category,
        "usage_prompt_tokens": completion.prompt_tokens,
        "usage_completion_tokens": completion.completion_tokens,
        "cached_tokens": completion.cached_tokens,
        "latency_s": completion.latency_s,
        "error": completion.error,
        "request_attempts": completion.attempts,
    }


def execution_order(items: Sequence[WorkItem], backend_name: str, seed: int) -> list[WorkItem]:
    """Prefix-sharing order for local engines; a seeded interleaving for remote APIs."""
    if backend_name in LOCAL_BACKENDS:
        order = prefix_order([item.prompt.token_ids for item in items])
    else:
        order = shuffled_order(len(items), seed)
    return [items[i] for i in order]


async def _execute(
    items: Sequence[WorkItem], backend: Backend, store: RunStore, reporter: Reporter | None
) -> None:
    for item in items:
        request = GenerateRequest(item.prompt.messages, item.prompt.token_ids, item.params)
        completion = await backend.generate(request)
        scores = score_parts(item.case, completion, context=item.prompt.messages[-1]["content"])
        store.record(
            {
                row_id(item, label): _result_row(completion, result)
                for (label, _), result in zip(item.case.scored_parts(), scores, strict=True)
            }
        )
        if reporter is not None:
            reporter.advance(item, completion)


def _check_run_dir(run_dir: Path, digest: str, resume: bool) -> None:
    database = run_dir / "run.db"
    if resume:
        return
    if database.exists():
        store = RunStore.open_existing(run_dir)
        stored = store.meta().get("config_digest")
        store.close()
        if stored != digest:
            raise BadInput(f"out: {run_dir} holds a different run; choose another --out")
        raise BadInput(
            f"out: {run_dir} holds this run already; continue it with rotscope run --resume {run_dir}"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise BadInput(f"out: {run_dir} is a file, not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise BadInput(f"out: {run_dir} is not empty and holds no rotscope run")


def _store_plan(
    store: RunStore, plan: Plan, ordered: list[WorkItem], config: ExperimentConfig, run_dir: Path, digest: str
) -> None:
    backend_name = plan.backend.get("backend", "")
    store.add_planned(
        (
            row
            for order, item in enumerate(ordered)
            for row in _planned_rows(item, order, run_dir.name, backend_name)
        ),
        {_prompt_digest(item): json.dumps(item.prompt.messages) for item in plan.items},
    )
    store.set_meta(
        {
            "run_id": run_dir.name,
            "rotscope_version": __version__,
            "config": config.model_dump(mode="json"),
            "config_digest": digest,
            "model": plan.items[0].model if plan.items else config.model,
            "backend": plan.backend,
            "corpus": plan.corpus,
            "rejected": plan.rejected,
            "tokens": {"naive_prefill": plan.naive_prefill, "lower_bound": plan.lower_bound},
            "order": "prefix trie"
            if backend_name in LOCAL_BACKENDS
            else f"seeded shuffle (seed {config.seed})",
        }
    )


def run_experiment(
    config: ExperimentConfig,
    *,
    run_dir: Path | None = None,
    resume: bool = False,
    reporter: Reporter | None = None,
    backend: Backend | None = None,
) -> Path:
    """Run (or, with ``resume``, continue) ``config`` in ``run_dir``; returns the run folder.

    Raises ``Interrupted`` on Ctrl-C with all finished items stored.
    """
    run_dir = run_dir or (Path(config.out) if config.out else default_run_dir(config))
    digest = config_digest(config)
    _check_run_dir(run_dir, digest, resume)
    backend = backend or create_backend(config)
    try:
        plan = build_plan(config, backend)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / CONFIG_FILE).write_text(dump_config(config), encoding="utf-8")
        store = RunStore(run_dir / "run.db")
        try:
            ordered = execution_order(plan.items, plan.backend.get("backend", ""), config.seed)
            _store_plan(store, plan, ordered, config, run_dir, digest)
            unfinished = store.unfinished()
            todo = [item for item in ordered if item.item_id in unfinished]
            backend.reserve(plan.max_prompt_tokens, config.generation.max_tokens)
            if reporter is not None:
                reporter.start(len(todo), sum(item.prompt.prompt_tokens for item in todo))
            try:
                asyncio.run(_execute(todo, backend, store, reporter))
            except KeyboardInterrupt:
                left = len(store.unfinished())
                raise Interrupted(run_dir, len(plan.items) - left, len(plan.items)) from None
            finally:
                if reporter is not None:
                    reporter.finish()
        finally:
            store.close()
    finally:
        backend.close()
    return run_dir


def resume_experiment(run_dir: Path, *, reporter: Reporter | None = None) -> Path:
    """Continue a run folder: same config, finished items skipped, errors retried."""
    store = RunStore.open_existing(run_dir)
    store.close()
    config = load_config(run_dir / CONFIG_FILE)
    return run_experiment(config, run_dir=run_dir, resume=True, reporter=reporter)


def dry_run(config: ExperimentConfig) -> Plan:
    """Plan and verify without calling a model."""
    backend = create_backend(config)
    try:
        return build_plan(config, backend)
    finally:
        backend.close()
