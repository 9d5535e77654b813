"""A planned run before anything is stored: what it is checked against (the frozen plan's
deviations, ``check_plan``; on ``--resume``, the folder's own items and filler corpus,
``same_items`` and ``same_corpus``; a plan with nothing to measure) and what the run says of it
(``grid_line`` before planning, ``planned_line`` and ``rejection_lines`` after)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.execution.state.run_folder import (
    has_store,
)
from rotscope.plan.manifest import Deviation, deviations, manifest_digest
from rotscope.plan.rejections import summary_lines
from rotscope.plan.workitems import Plan
from rotscope.run_meta import PlanRecord
from rotscope.store import RunStore
from rotscope.tasks import TASKS


def check_plan(
    frozen: Mapping[str, Any],
    manifest: Mapping[str, Any],
    allow_deviation: bool,
    intended: Callable[[Deviation], bool] = lambda deviation: False,
) -> PlanRecord:
    """Compare a run's manifest with the frozen plan: a deviation is bad input unless allowed (or
    ``intended``: a paired candidate's own model), and then each one is recorded. Returns the
    run's ``plan`` metadata."""
    found = deviations(frozen, manifest)
    refused = [deviation for deviation in found if not intended(deviation)]
    digest = manifest_digest(frozen)
    if refused and not allow_deviation:
        raise BadInput(
            f"plan {digest}: the run deviates at {refused[0].describe()}"
            f"{f' (and {len(refused) - 1} more fields)' if len(refused) > 1 else ''}; "
            "rerun with --allow-deviation to run it and record the deviations"
        )
    return {
        "digest": digest,
        "deviations": [
            {"field": item.field, "planned": item.planned, "actual": item.actual} for item in found
        ],
    }


def same_items(run_dir: Path, plan: Plan) -> None:
    """On ``--resume``, the re-planned work items must be the run's own: an item id hashes the
    exact prompt ids, so a tokenizer, template or prompt builder that changed since the run began
    would otherwise add a second experiment's items to the folder."""
    if not has_store(run_dir):
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


def same_corpus(run_dir: Path, corpus: Mapping[str, Any]) -> None:
    """On ``--resume``, the re-planned filler corpus must be the one the run's rows were made from
    (its digest in the run's metadata): a corpus that changed (files edited, or a path that now
    names other files) is refused before anything runs, never mixed into the run."""
    if not has_store(run_dir):
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


def own_length_tasks(config: ExperimentConfig) -> list[str]:
    """The tasks whose prompts keep a length of their own (``FamilyHooks.own_lengths``): the grid's
    ``lengths`` do not apply to them."""
    found = [(task, TASKS.find(task)) for task in config.tasks]
    return [task for task, family in found if family is not None and family.hooks.own_lengths]


def own_layout_tasks(config: ExperimentConfig) -> list[str]:
    """The tasks that place their evidence at named layouts of their own (``FamilyHooks.layout_order``,
    reasoning's ``end``, ``middle``, ...): the grid's ``depths`` do not apply to them."""
    found = [(task, TASKS.find(task)) for task in config.tasks]
    return [task for task, family in found if family is not None and family.hooks.layout_order]


def grid_line(config: ExperimentConfig) -> str:
    """What the run will do: its tasks, lengths, depths (and separations, where given) and trials.
    Replayed recordings run each at its own length, and a family with layouts of its own ignores the
    grid's depths, so lengths and depths are named only for the tasks that use them."""
    depths = f"depths {', '.join(str(depth) for depth in config.depths)}"
    layouts = own_layout_tasks(config)
    if layouts:
        placed = f"{', '.join(layouts)}: at layouts of its own"
        depths = placed if len(layouts) == len(config.tasks) else f"{depths} ({placed})"
    own = own_length_tasks(config)
    lengths = f"lengths {', '.join(f'{n:,}' for n in config.lengths)} tokens"
    if own:
        recorded = f"{', '.join(own)}: each recording at its own length"
        lengths = recorded if len(own) == len(config.tasks) else f"{lengths} ({recorded})"
    separations = config.placement.separations
    apart = f"; separations {', '.join(f'{s:,}' if isinstance(s, int) else f'{s:g}' for s in separations)}"
    return (
        f"tasks {', '.join(config.tasks)}; {lengths}; {depths}"
        f"{apart if separations else ''}; {config.trials} trial(s)"
    )


def refuse_nothing_to_measure(plan: Plan, config: ExperimentConfig) -> None:
    """A run whose every prompt was rejected (``depths: ["@5000"]`` at 512 tokens) is bad input in
    one line, before anything is written or spent: it could measure nothing, and a run folder of
    zero rows with exit 0 would pass for a finished measurement; so is a plan of no case at all
    (``case_offset`` past every task's cases). (A search step is exempt: the
    search decides what a length without a placed prompt means.)"""
    if not plan.items and plan.rejected:
        first = summary_lines(plan.rejections, ())[0]
        raise BadInput(
            f"nothing to measure: every prompt was rejected ({len(plan.rejected)}; "
            f"first: {first}); change depths or lengths so the evidence fits the filler"
        )
    refuse_no_case(plan, config)


def refuse_no_case(plan: Plan, config: ExperimentConfig) -> None:
    """A plan of no case at all (``case_offset`` past every task's cases) is bad input naming the
    window; a dry run or ``rotscope plan`` refuses it too (an all-rejected plan they print)."""
    if not plan.items and not plan.rejections:
        window = f"case_offset {config.case_offset}" if config.case_offset else "the task's cases"
        if config.limit is not None:
            window += f", limit {config.limit}"
        raise BadInput(
            f"nothing to measure: no case was selected ({', '.join(config.tasks)}; {window}); "
            "lower case_offset, or give the task a case file that holds cases"
        )


def planned_line(plan: Plan) -> str:
    """What the verifier passed: calls, distinct prompts, rejections and the tokens to evaluate."""
    cases = {(item.case.task, item.case.case_id) for item in plan.items if not item.case.control}
    controls = {(item.case.task, item.case.case_id) for item in plan.items if item.case.control}
    counted = f"{len(cases)} cases" + (f", {len(controls)} controls" if controls else "")
    line = (
        f"planned {len(plan.items)} calls ({counted}), "
        f"{len({item.prompt.token_ids for item in plan.items})} distinct prompts verified, "
        f"{len(plan.rejected)} rejected; prompt tokens {plan.naive_prefill:,} "
        f"(distinct prefixes {plan.lower_bound:,})"
    )
    return line


def rejection_lines(plan: Plan, detail: str | None = None) -> list[str]:
    """The plan's rejections in plain words, after ``planned_line``: one line per rejected layout,
    a cause shared by several layouts of a case once with its count, a case left without a prompt
    said not measured, and ``detail`` (the run folder's ``rejections.jsonl``) named."""
    measured = {(item.case.task, item.case.case_id) for item in plan.items if not item.case.control}
    return summary_lines(plan.rejections, measured, detail)


__all__ = [
    "check_plan",
    "grid_line",
    "own_layout_tasks",
    "own_length_tasks",
    "planned_line",
    "refuse_no_case",
    "refuse_nothing_to_measure",
    "rejection_lines",
    "same_corpus",
    "same_items",
]
