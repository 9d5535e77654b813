"""``reasoning``: a problem to solve, placed inside filler made of other problems (Context Rot
Evaluation). Moved from the end of the context to its middle, a model's accuracy can fall sharply,
and its wrong answers tend to repeat the filler's numbers.

Layouts say where the target problem goes: ``end`` (last, right before the question), ``middle``
(at the midpoint), and two diagnostic probes: ``middle_twice`` (two copies at the midpoint, none at
the end) and ``middle_dup`` (one at the midpoint, one at the end). The question and the answer
instruction are the same words in every layout.

Fillers: ``with_solutions`` (other items with worked solutions and answers), ``questions_only``
(other items' problems alone), ``neutral`` (the experiment's filler source). The filler stream is
one fixed order of the pool: items that are never targets first, the other targets after them, so
a target never appears in its own filler and prompts of different targets share their filler.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rotscope.tasks.reasoning.items import ReasoningItem, generated_items, load_arc, load_gsm8k
from rotscope.tasks.reasoning.options import ReasoningConfig, ReasoningLayout
from rotscope.types import Case, Evidence, Oracle

TASK = "reasoning"
TARGET_LABEL = "TARGET PROBLEM"
QUESTION = f"Solve the problem marked {TARGET_LABEL} in the context."
LAYOUT_COPIES: dict[ReasoningLayout, tuple[float, ...]] = {
    "end": (1.0,),
    "middle": (0.5,),
    "middle_twice": (0.5, 0.5),
    "middle_dup": (0.5, 1.0),
}
"""Depth of each copy of the target problem, by layout."""
LAYOUT_DEPTH: dict[ReasoningLayout, float] = {name: min(depths) for name, depths in LAYOUT_COPIES.items()}
"""The depth a layout's cell is filed under: where its probe copy sits."""
DEFAULT_ITEMS = 20
FILLER_ANSWER = "filler_answer"
"""Failure category of a wrong answer that is the answer of a filler item in the same prompt."""


@dataclass(frozen=True)
class Pool:
    """Target items and the rest of the pool (for generated items, an endless supply)."""

    targets: tuple[ReasoningItem, ...]
    others: tuple[ReasoningItem, ...]
    seed: int
    generated: bool

    def stream(self, target: ReasoningItem) -> Iterator[ReasoningItem]:
        """The filler items for ``target``: the one stream of the pool without the target."""
        if self.generated:
            rest: Iterator[ReasoningItem] = itertools.islice(
                generated_items(self.seed), len(self.targets), None
            )
        else:
            rest = iter(self.others)
        yield from rest
        yield from (item for item in self.targets if item.item_id != target.item_id)


def load_pool(config: ReasoningConfig, seed: int, limit: int | None = None) -> Pool:
    """The first ``items`` (and at most ``limit``) items of the source, in a seeded order, are
    targets; the rest of the pool is filler."""
    count = min(config.items, limit or config.items)
    if config.source == "generated":
        targets = tuple(itertools.islice(generated_items(seed), count))
        return Pool(targets, (), seed, generated=True)
    assert config.path is not None
    path = Path(config.path)
    items = load_gsm8k(path) if config.source == "gsm8k" else load_arc(path)
    random.Random(f"reasoning-pool:{seed}").shuffle(items)
    return Pool(tuple(items[:count]), tuple(items[count:]), seed, generated=False)


def filler_text(item: ReasoningItem, with_solution: bool) -> str:
    """One filler item as lines, no blank line inside (a blank line separates items)."""
    lines = [f"Problem: {item.question}"]
    if with_solution:
        lines += [f"Step {number}: {step}" for number, step in enumerate(item.steps, start=1)]
        lines.append(f"Answer: {item.answer}")
    return "\n".join(line for line in lines if line.strip()) + "\n"


def target_text(item: ReasoningItem) -> str:
    return f"{TARGET_LABEL}: {item.question}"


def layout_case(item: ReasoningItem, layout: ReasoningLayout) -> Case:
    """The case of ``item`` in ``layout``: one evidence piece per copy, each at its pinned depth.
    Every layout of an item has the same case id, so layouts pair on it."""
    depths = LAYOUT_COPIES[layout]
    evidence = tuple(
        Evidence(f"target-{number}" if len(depths) > 1 else "target", target_text(item), "answer", depth)
        for number, depth in enumerate(depths, start=1)
    )
    return Case(
        case_id=item.item_id,
        task=TASK,
        evidence=evidence,
        question=QUESTION,
        oracle=Oracle(answer=item.answer, kind=item.kind),
    )


def build_reasoning_cases() -> list[Case]:
    """Generated items at the end of the context; experiments plan every layout and filler from
    their ``reasoning`` settings instead."""
    pool = load_pool(ReasoningConfig(items=DEFAULT_ITEMS), seed=0)
    return [layout_case(item, "end") for item in pool.targets]
