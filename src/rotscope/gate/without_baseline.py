"""A FAILed release's advice for when the baseline can no longer be restored (the rollback's
``without_baseline``), computed from the candidate's measured data in the record as written.

The gate study's three ways out: permit only a window the candidate still supports, move to
retrieval and a short context, and refuse the tasks it cannot do. Here, per task (and the slice
fields its slices are split by):

- the window is the task's ``supported_up_to`` (every position passes there and at every shorter
  length, ``supported_lengths``); the window to permit is the smallest of those over the tasks
  still served;
- a task is refused when the candidate's accuracy at every tested length is below the threshold;
- retrieval to a shorter context is advised for a task still served when some tested length is not
  supported and the candidate answers the short input at or above the threshold: its evidence-only
  control (the case's evidence with no padding), else its shortest tested length. A task that fails
  the short input too is a capability failure, which retrieval does not mend.

The threshold is the plan's accuracy floor (``gate.floor``): the least accuracy the release
accepts in any slice. A length's accuracy is the instance-weighted mean of its positions' candidate
accuracies (the slices' instance means).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rotscope.gate.record_checks import TaskAdvice, WithoutBaseline

SHORT = "evidence-only"
"""The key of the evidence-only control's accuracy (the slices' position at length 0)."""


def without_baseline(record: Mapping[str, Any]) -> WithoutBaseline:
    """The advice of ``record`` (``GateRecord.model_dump()``) for when its baseline is gone."""
    threshold = float((record.get("analysis") or {}).get("floor", 0.0))
    window = record.get("supported_up_to") or {}
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for item in record.get("slices", []):
        fields = "".join(f" {key}={value}" for key, value in sorted((item.get("fields") or {}).items()))
        groups[(item["task"], fields)].append(item)
    keys = sorted(groups)
    tasks = [
        _advice(task + fields, window.get(task), groups[(task, fields)], threshold) for task, fields in keys
    ]
    limits = [window.get(task) for (task, _), advice in zip(keys, tasks, strict=True) if not advice.refuse]
    known = [limit for limit in limits if isinstance(limit, int)]
    largest = min(known) if known and len(known) == len(limits) else None
    return WithoutBaseline(
        threshold=threshold,
        largest_supported=largest,
        retrieval_advised=any(advice.retrieval for advice in tasks),
        refuse=[advice.task for advice in tasks if advice.refuse],
        tasks=tasks,
    )


def _accuracy(items: Sequence[Mapping[str, Any]]) -> float | None:
    """Instance-weighted mean of the slices' candidate accuracies (``None``: none scored)."""
    scored = [(item["candidate_accuracy"], item["instances"]) for item in items
              if item.get("candidate_accuracy") is not None and item.get("instances")]  # fmt: skip
    total = sum(count for _, count in scored)
    return sum(value * count for value, count in scored) / total if total else None


def _advice(name: str, limit: Any, items: Sequence[Mapping[str, Any]], threshold: float) -> TaskAdvice:
    lengths = sorted({item["length"] for item in items if item["length"] > 0})
    by_length = {length: _accuracy([i for i in items if i["length"] == length]) for length in lengths}
    short_items = [item for item in items if item["length"] == 0]
    accuracy: dict[str, float | None] = {str(length): value for length, value in by_length.items()}
    if short_items:
        accuracy[SHORT] = _accuracy(short_items)
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    known = [value for value in by_length.values() if value is not None]
    refuse = bool(known) and all(value < threshold for value in known)
    short_name, short = (
        ("the evidence-only input", accuracy.get(SHORT))
        if short_items
        else (
            f"the shortest length, {lengths[0]:,}," if lengths else "no input",
            by_length.get(lengths[0]) if lengths else None,
        )
    )
    cut = bool(lengths) and (limit is None or limit < lengths[-1])
    retrieval = not refuse and cut and short is not None and short >= threshold
    shown = ", ".join(f"{_fmt(value)} at {length:,}" for length, value in by_length.items())
    if refuse:
        why = f"refuse: accuracy below {threshold:.2f} at every tested length ({shown})"
    else:
        window = "no tested length supported" if limit is None else f"supported up to {limit:,} tokens"
        why = f"{window} (accuracy {shown})"
        if retrieval:
            why += (
                f"; retrieve to a short context: {short_name} scores {_fmt(short)}, "
                f"at or above {threshold:.2f}"
            )
        elif cut and short is not None:
            why += f"; retrieval would not help: {short_name} scores {_fmt(short)}, below {threshold:.2f}"
    return TaskAdvice(
        task=name, supported_up_to=limit, accuracy=accuracy, refuse=refuse, retrieval=retrieval, why=why
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def steps(advice: WithoutBaseline) -> list[str]:
    """The advice as the rollback's last step, in words."""
    parts = []
    if advice.largest_supported is not None:
        parts.append(
            f"permit at most {advice.largest_supported:,} tokens "
            "(the largest length every task served still supports)"
        )
    elif any(not task.refuse for task in advice.tasks):
        parts.append("permit no tested length: a task still served has none supported")
    retrieve = [task.task for task in advice.tasks if task.retrieval]
    if retrieve:
        parts.append(f"retrieve to a short context for {', '.join(retrieve)}")
    if advice.refuse:
        parts.append(
            f"refuse {', '.join(advice.refuse)} (accuracy below {advice.threshold:.2f} at every length)"
        )
    if not parts:
        return []
    detail = "; ".join(f"{task.task}: {task.why}" for task in advice.tasks)
    return [f"If the baseline is no longer available: {'; '.join(parts)}. Per task: {detail}."]
