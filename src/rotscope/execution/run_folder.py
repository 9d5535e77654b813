"""A run folder: its identity (the config digest), the planned rows stored before the first call,
and the metadata that lets any command read the run back."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rotscope._version import __version__
from rotscope.config import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.execution.execute import row_id
from rotscope.plan.workitems import Plan
from rotscope.store import RunStore
from rotscope.types import WorkItem

CONFIG_FILE = "config.yaml"
RUNTIME_FIELDS = {"out", "max_cost", "cache", "limits", "prices", "max_error_rate", "executor", "analysis"}
"""Fields that change how a run is executed or judged, not its results: left out of its identity,
so ``--resume`` may change them (``analysis`` only changes how the results are summarised)."""


def config_digest(config: ExperimentConfig) -> str:
    """Identity of an experiment: every field except where its results go and how it executes."""
    fields = config.model_dump(mode="json", exclude=RUNTIME_FIELDS)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def default_run_dir(config: ExperimentConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.name}-{stamp}"


def planned_rows(item: WorkItem, order: int, run_id: str, backend: str) -> list[dict[str, Any]]:
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
                "filler": item.layout.filler,
                "spans": json.dumps([span for span in spans if span["evidence_id"].startswith(prefix)]),
                "trial": item.trial,
                "seed": item.params.seed,
                "prompt_digest": prompt_digest(item),
                "question": part.question,
                "expected": "not in the context" if part.oracle.abstain else part.oracle.answer,
                "slices": json.dumps(dict(part.slices), sort_keys=True),
            }
        )
    return rows


def _evidence_fields(item: WorkItem, evidence_id: str) -> dict[str, str]:
    evidence = next(e for e in item.case.evidence if e.evidence_id == evidence_id)
    fields = {"text": evidence.text, "role": evidence.role}
    if evidence.source is not None:
        fields["source"] = evidence.source  # a line already in this corpus document, not inserted
    return fields


def prompt_digest(item: WorkItem) -> str:
    return hashlib.sha256(item.prompt.text.encode("utf-8")).hexdigest()[:24]


def check_run_dir(run_dir: Path, digest: str, resume: bool) -> None:
    database = run_dir / "run.db"
    if resume:
        return
    if database.exists():
        with RunStore.read(run_dir) as store:
            stored = store.meta().get("config_digest")
        if stored != digest:
            raise BadInput(f"out: {run_dir} holds a different run; choose another --out")
        raise BadInput(
            f"out: {run_dir} holds this run already; continue it with rotscope run --resume {run_dir}"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise BadInput(f"out: {run_dir} is a file, not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise BadInput(f"out: {run_dir} is not empty and holds no rotscope run")


def store_plan(
    store: RunStore,
    plan: Plan,
    ordered: list[WorkItem],
    config: ExperimentConfig,
    run_dir: Path,
    digest: str,
    local: bool,
) -> None:
    backend_name = plan.backend.get("backend", "")
    store.add_planned(
        (
            row
            for order, item in enumerate(ordered)
            for row in planned_rows(item, order, run_dir.name, backend_name)
        ),
        {prompt_digest(item): json.dumps(item.prompt.messages) for item in plan.items},
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
            "order": "prefix trie" if local else f"seeded shuffle (seed {config.seed})",
        }
    )
