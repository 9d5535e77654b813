"""The assembly faults a run asks for (``inject:``, ``run --inject``) applied to its verified work
items: each prompt transformed once (``prompt.faults``; its trials share it), re-hashed with its
faults, and a layout the faults make unplaceable turned into a rejection, counted and named like
any the builder could not place."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from rotscope.config.experiment import ExperimentConfig
from rotscope.prompt.faults import Faulted, FaultRefused, inject, labels, parse_faults, window_for
from rotscope.types import Rejection, Tokenizer, WorkItem


def inject_faults(
    items: Sequence[WorkItem],
    config: ExperimentConfig,
    tokenizer: Tokenizer,
    rehash: Callable[[WorkItem, str], str],
) -> tuple[list[WorkItem], list[Rejection]]:
    """``items`` with ``config.inject``'s faults in their prompts and ids (``rehash``: an item's id
    with its fault labels), and a rejection per layout a fault refused."""
    faults = parse_faults(config.inject)
    label = labels(faults)
    longest = max([*config.lengths, *(length for item in items for length, _ in item.case.pins)])
    window = window_for(faults, longest)
    done: dict[tuple[str, str, object], Faulted | str] = {}
    kept: list[WorkItem] = []
    rejected: list[Rejection] = []
    for item in items:
        key = (item.case.task, item.case.case_id, item.layout)
        if key not in done:
            try:
                done[key] = inject(
                    faults,
                    item.prompt,
                    item.case,
                    item.layout,
                    tokenizer,
                    seed=config.seed,
                    window=window,
                    max_tokens=item.params.max_tokens,
                )
            except FaultRefused as refused:
                done[key] = str(refused)
                rejected.append(Rejection.of(item.case, item.layout, f"{refused} (--inject {label})"))
        found = done[key]
        if isinstance(found, str):
            continue
        faulted = dataclasses.replace(item, prompt=found.prompt, fault=label, evidence_lost=found.lost)
        kept.append(dataclasses.replace(faulted, item_id=rehash(faulted, label)))
    return kept, rejected
