"""``multikey``: many keys in one prompt, each at its own depth of the experiment's depth list,
the questions asked in a seeded order that differs from depth order (as the 700K-token study
planted nine keys per prompt). A multi-question prompt (``tasks/bundles.py``) whose questions sit
at depths of their own: each key is scored on its own and counted in the cell of its own depth,
while the prompt stays one cluster (instance) for intervals, so a depth effect inside one prompt
is measurable.

Keys per prompt: ``questions_per_prompt`` when it is above 1, else one per depth; at most one per
depth. Depths rotate over consecutive prompts (a seeded order per block of as many prompts as
depths), so within each block every depth holds the same number of keys. Keys and codes are
invented: nothing can be answered from a model's knowledge.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rotscope.errors import BadInput
from rotscope.tasks import register_task
from rotscope.tasks.bundles import bundle_at_depths
from rotscope.types import Case, Evidence, Oracle

if TYPE_CHECKING:
    from rotscope.config.experiment import ExperimentConfig

TASK = "multikey"
MIN_PROMPTS = 12
_SYLLABLES = ("vor", "quel", "dax", "mir", "tup", "zen", "kol", "fae", "brin", "sol", "yth", "gav")


def key_case(case_id: str, locker: str, code: str) -> Case:
    """One key: the code of an invented locker, asked by the locker's name."""
    needle = f"The access code of locker {locker} is {code}."
    question = f"What is the access code of locker {locker}?"
    if code not in needle or locker not in question or code in question:
        raise ValueError(f"{TASK} case {case_id}: the needle must state the code the question asks for")
    return Case(
        case_id=case_id,
        task=TASK,
        evidence=(Evidence("key", needle, "answer"),),
        question=question,
        oracle=Oracle(answer=code),
        guarded=(locker, code),
    )


def _lockers(rng: random.Random, count: int) -> list[str]:
    found: set[str] = set()
    while len(found) < count:
        found.add(f"{rng.choice(_SYLLABLES).title()}{rng.choice(_SYLLABLES)}-{rng.randrange(10, 100)}")
    return sorted(found, key=lambda _: rng.random())


def build_multikey_cases(
    depths: list[tuple[float, str | None]], keys: int, prompts: int, seed: int
) -> list[Case]:
    """``prompts`` bundles of ``keys`` keys each; prompt ``g`` of a block puts key ``i`` at the
    block's ``(g + i)``-th depth (the block's depth order seeded)."""
    if not 2 <= keys <= len(depths):
        raise BadInput(
            f"questions_per_prompt: {TASK} puts each of its keys at a depth of its own, so it needs "
            f"2 to {len(depths)} keys (one per fractional depth), got {keys}"
        )
    rng = random.Random(f"{TASK}:{seed}")
    lockers = _lockers(rng, prompts * keys)
    codes = [str(code) for code in rng.sample(range(100000, 1000000), prompts * keys)]
    bundles: list[Case] = []
    order: list[int] = []
    for prompt in range(prompts):
        if prompt % len(depths) == 0:
            order = rng.sample(range(len(depths)), len(depths))
        at = [depths[order[(prompt + i) % len(depths)]] for i in range(keys)]
        cases = [
            key_case(f"mk-{prompt:02d}-k{i}", lockers[prompt * keys + i], codes[prompt * keys + i])
            for i in range(keys)
        ]
        bundle = bundle_at_depths(cases, at, rng)
        if [label for label, _ in bundle.parts] != [f"Q{n}" for n in range(1, keys + 1)]:
            raise ValueError(f"{TASK} prompt {prompt}: questions must be labelled Q1..Q{keys}")
        bundles.append(bundle)
    return bundles


@dataclass(frozen=True)
class MultikeyFamily:
    name: str
    config: ExperimentConfig

    def cases(self) -> list[Case]:
        depths = self.config.positions()
        if len(depths) < 2:
            raise BadInput(f"depths: {TASK} needs at least two fractional depths, got {len(depths)}")
        keys = self.config.questions_per_prompt if self.config.questions_per_prompt > 1 else len(depths)
        prompts = len(depths) * -(-MIN_PROMPTS // len(depths))
        return build_multikey_cases(depths, keys, prompts, self.config.seed)


@register_task(TASK)
def multikey_family(config: ExperimentConfig) -> MultikeyFamily:
    return MultikeyFamily(TASK, config)
