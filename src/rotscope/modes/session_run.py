"""A session's subjects run as one: each planned in its folder, their calls in one seeded
interleaving of groups, on one event loop with one set of provider limits and one ``--max-cost``
(``models_session`` starts and resumes it; ``pair`` is its two-subject form). What differs between
the forms is words, the stored order's rounds and the run store's key (``Form``), so that folders
written before either form changed keep resuming in the order they were stored in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rotscope.config.experiment import ExperimentConfig
from rotscope.execution.calls.cost import Budget
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.calls.limits import Limiters
from rotscope.execution.calls.order import execution_order
from rotscope.execution.state.run_folder import writing
from rotscope.execution.workflows.planned import refuse_nothing_to_measure
from rotscope.execution.workflows.run_steps import RunSteps, open_run_steps
from rotscope.execution.workflows.runner import BudgetReached, stops
from rotscope.modes.intended import intended_by, upgrade_line
from rotscope.modes.session_record import Kind, SessionRecord, read_record, write_record
from rotscope.plan.schedule import paired_rounds, subject_rounds, trie_runs
from rotscope.run_meta import SessionMeta
from rotscope.store import RunStore
from rotscope.types import Backend, WorkItem

IDENTICAL = "identical prompts, token for token (the subjects share tokenizer, template and system prompt)"
RERENDERED = (
    "the same cases and layouts, re-rendered and re-verified per subject (their tokenizer, template or "
    "system prompt differ)"
)


@dataclass(frozen=True)
class Form:
    """What a session form says and stores: its option and words, the seeds' sentence, the rounds
    its stored order was drawn with, and the run store's key for the session (``pair``, as paired
    folders have always held it, or ``session``) with the key naming the folder's own subject."""

    option: str
    words: str
    seeds: str
    rounds: Callable[[Sequence[int], int], list[tuple[int, int]]]
    meta_key: str
    own_key: str

    def label(self, folder: str, subject: str) -> str:
        """How errors name one subject: a pair's by role, a --models session's as given."""
        return f"{self.option} {folder if self.option == '--pair' else subject}"

    def described(self, count: int, grouping: str, seed: int) -> str:
        if self.option == "--pair":
            return f"paired with the other subject: {grouping}, rounds in seeded order (seed {seed})"
        return f"one of {count} subjects in seeded rounds: {grouping} (seed {seed})"


FORMS: dict[Kind, Form] = {
    "models": Form(
        "--models",
        "a --models session",
        "generation.seed + trial, the same for every subject in every (case, length, position, trial)",
        subject_rounds,
        "session",
        "subject",
    ),
    "pair": Form(
        "--pair",
        "a paired session",
        "generation.seed + trial, the same for both subjects in every (case, length, position, trial)",
        lambda counts, seed: paired_rounds((counts[0], counts[1]), seed),
        "pair",
        "role",
    ),
}


def run_session(
    record: SessionRecord,
    configs: Mapping[str, ExperimentConfig],
    out: Path,
    resume: bool,
    reporter: Reporter | None,
    backends: Mapping[str, Backend] | None,
) -> Path:
    """Plan every subject of ``record`` (against its frozen plan unless ``resume``), store each in
    its share of the joint order, mark the session planned, then make the calls; returns ``out``."""
    form = FORMS[record.kind]
    frozen = None if resume else record.frozen_plan
    allow_deviation = not resume and record.allow_deviation
    names = list(configs)
    first = configs[names[0]]
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(writing(out / name))
            if resume:
                RunStore.open_existing(out / name).close()  # a readable store, migrated under the lock
        subjects_steps: dict[str, RunSteps] = {}
        try:
            for name in names:
                steps = open_run_steps(
                    configs[name],
                    out / name,
                    resume=resume,
                    reporter=reporter,
                    backend=(backends or {}).get(name),
                )
                subjects_steps[name] = steps
                plan = steps.prepare(frozen, allow_deviation, intended_by(configs[name], frozen, name))
                if not resume:
                    refuse_nothing_to_measure(plan, configs[name])
            upgraded = upgrade_line(frozen)
            if upgraded is not None and reporter is not None:
                reporter.notice(upgraded)
            order = joint_order(subjects_steps, first.seed, form.rounds)
            prompts = _prompts(subjects_steps)
            meta: SessionMeta = {
                "subjects": {name: configs[name].model for name in names},
                "names": {name: configs[name].subject for name in names},
                "folder": str(out.resolve()),
                "seed": first.seed,
                "seeds": form.seeds,
                **({"prompts": prompts} if record.kind == "models" else {}),
                "grouping": {name: _grouping(steps) for name, steps in subjects_steps.items()},
                "order": [[name, [item.item_id for item in group]] for name, group in order],
                **({} if upgraded is None else {"accepted_upgrade": upgraded}),
            }
            for name, steps in subjects_steps.items():
                steps.open(
                    [item for owner, group in order if owner == name for item in group],
                    {form.meta_key: {**meta, form.own_key: name}},
                    described=form.described(len(names), _grouping(steps), first.seed),
                )
            stored = read_record(out)
            write_record(
                out, stored.model_copy(update={"planned": True, "prompts": prompts, "names": meta["names"]})
            )
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
                spent = sum(steps.opened().spent() for steps in subjects_steps.values())  # one budget
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


def _prompts(subjects_steps: Mapping[str, RunSteps]) -> str:
    """Whether every subject got the same prompts, token for token (call ids name the model, so
    the prompts are compared as a whole)."""
    prompts = [
        sorted(tuple(item.prompt.token_ids) for item in steps.plan.items) for steps in subjects_steps.values()
    ]
    return IDENTICAL if all(p == prompts[0] for p in prompts[1:]) else RERENDERED


def _grouping(steps: RunSteps) -> str:
    if steps.local:
        return "prefix groups: runs of prompts sharing at least half their tokens (local engine)"
    return "blocks of as many calls as its provider's concurrency, in a seeded shuffle (remote API)"


def joint_order(
    subjects_steps: Mapping[str, RunSteps],
    seed: int,
    rounds: Callable[[Sequence[int], int], list[tuple[int, int]]] = subject_rounds,
) -> list[tuple[str, list[WorkItem]]]:
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
    drawn = rounds([len(groups[name]) for name in names], seed)
    return [(names[subject], groups[names[subject]][number]) for subject, number in drawn]


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
        prefill: dict[str, int] = {}
        for name, steps in subjects_steps.items():  # each subject's engine keeps its own prefixes
            prefill.update(
                steps.prefill([item for owner, batch in batches if owner == name for item in batch])
            )
        reporter.start(len(calls), sum(item.prompt.prompt_tokens for item in calls), prefill)
    first = next(iter(subjects_steps.values()))

    async def run() -> str | None:
        limiters = Limiters(first.config.limits)  # one provider's limits hold for every subject
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
