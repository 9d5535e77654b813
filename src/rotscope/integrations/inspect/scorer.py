"""rotscope's deterministic scorer inside Inspect, with its outcomes and failure categories, and
the metrics a rotscope summary reports: accuracy per cell (task, length, position) and standard
errors clustered by instance (a case seen at several layouts is one instance, not several)."""

from __future__ import annotations

from collections.abc import Mapping

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    NOANSWER,
    Metric,
    Score,
    Scorer,
    Target,
    accuracy,
    grouped,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from rotscope.scoring import score_parts
from rotscope.types import Completion, WorkItem
from rotscope.types import Score as RotscopeScore

VALUES = {"correct": CORRECT, "incorrect": INCORRECT, "abstained": NOANSWER}
"""rotscope's outcome as Inspect's value; an ``error`` never reaches a scorer (Inspect records the
sample's error instead), as a rotscope error row is never scored."""


def metrics() -> list[Metric | dict[str, list[Metric]]]:
    return [
        accuracy(),
        stderr(cluster="instance_id"),
        grouped(accuracy(), "cell", all=False, name_template="accuracy {group_name}"),
        grouped(stderr(cluster="instance_id"), "cell", all=False, name_template="stderr {group_name}"),
    ]


def to_inspect(scores: list[tuple[str, RotscopeScore]], reply: str) -> Score:
    """One Inspect score for a prompt's scores: the outcome of its question, or for a prompt of
    several questions the share answered correctly; each question's outcome and category kept."""
    if len(scores) == 1:
        value: str | float = VALUES.get(scores[0][1].outcome, INCORRECT)
    else:
        value = sum(result.outcome == "correct" for _, result in scores) / len(scores)
    parts = {label or "answer": {"outcome": r.outcome, "category": r.category} for label, r in scores}
    categories = sorted({r.category for _, r in scores if r.category})
    return Score(
        value=value,
        answer=reply,
        explanation=", ".join(categories) or None,
        metadata={"outcomes": parts},
    )


@scorer(metrics=metrics(), name="deterministic")
def deterministic(items: Mapping[str, WorkItem]) -> Scorer:
    """rotscope's scorer for the items a task planned (keyed by sample id = item id)."""

    async def score(state: TaskState, target: Target) -> Score:
        item = items[str(state.sample_id)]
        reply = state.output.completion
        results = score_parts(item.case, Completion(text=reply), filler=item.prompt.filler_text())
        labels = [label for label, _ in item.case.scored_parts()]
        return to_inspect(list(zip(labels, results, strict=True)), reply)

    return score
