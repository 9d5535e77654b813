"""Multi-question prompts: several cases of one family share a prompt, each with its own question.

Evidence goes in the cases' order; the questions are asked in a seeded order that differs from
it, so answering in evidence order is no shortcut. Each question is scored on its own, and the
questions of one prompt form one cluster (instance) for statistics. A bundle may pin each
question's evidence at a depth of its own (``bundle_at_depths``): each question is then reported
in the cell of its own depth, the prompt still one cluster.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from rotscope.types import Case, Oracle


def bundle_cases(cases: Sequence[Case], rng: random.Random) -> Case:
    """One case holding ``cases`` as labelled parts (Q1, Q2, ...) with all their evidence."""
    order = list(range(len(cases)))
    while len(cases) > 1 and order == sorted(order):
        rng.shuffle(order)
    parts = tuple((f"Q{number}", cases[index]) for number, index in enumerate(order, start=1))
    return Case(
        case_id="+".join(case.case_id for case in cases),
        task=cases[0].task,
        evidence=tuple(
            replace(evidence, evidence_id=f"{case.case_id}/{evidence.evidence_id}")
            for case in cases
            for evidence in case.evidence
        ),
        question="\n".join(f"{label}: {case.question}" for label, case in parts),
        oracle=Oracle(answer=""),
        guarded=tuple(dict.fromkeys(guard for case in cases for guard in case.guarded)),
        parts=parts,
        grouped=all(case.grouped for case in cases),
    )


def bundle_at_depths(
    cases: Sequence[Case], depths: Sequence[tuple[float, str | None]], rng: random.Random
) -> Case:
    """A bundle whose questions sit at depths of their own: case ``i``'s evidence pinned at
    ``depths[i]`` (its rows counted there), the evidence in depth order and the questions asked in
    a seeded order that differs from it."""
    if len(cases) != len(depths) or len(set(depths)) != len(depths):
        raise ValueError("a bundle at depths needs one distinct depth per case")
    pinned = [
        replace(case, evidence=tuple(replace(e, depth=at[0]) for e in case.evidence), at_depth=at)
        for case, at in zip(cases, depths, strict=True)
    ]
    return bundle_cases(sorted(pinned, key=lambda case: case.at_depth or (0.0, None)), rng)


def bundle_all(cases: Sequence[Case], per_prompt: int, seed: int) -> list[Case]:
    """Consecutive groups of ``per_prompt`` cases of the same family as bundles (a last, smaller
    group too); ``per_prompt`` 1 leaves the cases as they are, and so is a family whose cases are
    bundles already (``multikey`` bundles its own). A pinned case (``Case.pins``) stays a prompt of
    its own, after the bundles: it runs at its own layouts, not the grid's."""
    if per_prompt <= 1 or any(case.parts for case in cases):
        return list(cases)
    rng = random.Random(f"bundles:{seed}")
    bundles: list[Case] = []
    for task in dict.fromkeys(case.task for case in cases):
        family = [case for case in cases if case.task == task and not case.pins]
        for start in range(0, len(family), per_prompt):
            group = family[start : start + per_prompt]
            bundles.append(bundle_cases(group, rng) if len(group) > 1 else group[0])
    return bundles + [case for case in cases if case.pins]
