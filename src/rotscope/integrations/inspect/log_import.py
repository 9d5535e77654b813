"""An Inspect AI log of a rotscope task (``inspect eval rotscope/niah ...``, or ``rotscope export
--format inspect``) read back into ``ImportedItem``s with Inspect's own reader
(``inspect_ai.log.read_eval_log``): each sample's metadata (task, case, instance, length, depth,
position, control, trial) puts it back in its cell, its score says its outcome.

A sample without that metadata is not a rotscope task's: one line names it, unless ``--map`` says
where another task's samples keep them (``mapped_meta``: ``length=metadata.ctx_len,depth=metadata.
needle_depth``; the case defaults to the sample's id, the instance to the case, the task to the log's
task, the position to unknown)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER

from rotscope.errors import BadInput
from rotscope.imports.items import ImportedItem
from rotscope.integrations.inspect.log import SCORER
from rotscope.position import Position

NEEDED = ("task", "case_id", "instance_id", "length", "depth")
"""The sample metadata an imported sample must carry (``position`` may be null)."""
OUTCOMES = {CORRECT: "correct", INCORRECT: "incorrect", NOANSWER: "abstained"}
"""Inspect's score value as rotscope's outcome (``scorer.VALUES`` the other way)."""


def read_log(path: Path, source: str) -> EvalLog:
    """The log at ``path``; ``BadInput`` naming the file when Inspect cannot read it."""
    try:
        return read_eval_log(str(path))
    except FileNotFoundError:
        raise BadInput(f"{source}: no such file") from None
    except Exception as error:  # Inspect's reader raises many kinds for a file that is not a log
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BadInput(f"{source}: not an Inspect log Inspect can read ({first[:200]})") from None


def _outcome(sample: EvalSample) -> tuple[str | None, float | None, str | None]:
    """The sample's outcome, its score where partial, and the error where it has none."""
    if sample.error is not None:
        return None, None, sample.error.message.splitlines()[0] if sample.error.message else "error"
    scores = sample.scores or {}
    score = scores.get(SCORER) or next(iter(scores.values()), None)
    if score is None:
        return None, None, "no score in the log"
    stated = (score.metadata or {}).get("outcome")
    if stated in ("correct", "incorrect", "abstained"):
        return stated, None, None
    value = score.value
    if isinstance(value, str) and value in OUTCOMES:
        return OUTCOMES[value], None, None
    if isinstance(value, bool):
        return ("correct" if value else "incorrect"), None, None
    if isinstance(value, int | float) and 0 <= value <= 1:
        partial = float(value) if value not in (0, 1) else None
        return ("correct" if value == 1 else "incorrect"), partial, None
    raise BadInput(f"sample {sample.id}: score {json.dumps(value)[:40]} is not C, I, N or a number in [0, 1]")


MAP_KEYS = ("length", "depth", "position", "case_id", "instance_id", "task", "trial")
"""What ``--map`` can say where a sample keeps: rotscope's name = ``metadata.KEY`` (dots reach into
nested metadata), ``id`` (the sample's id) or ``epoch``."""


def parse_map(text: str) -> dict[str, str]:
    """``--map length=metadata.ctx,depth=metadata.d``: rotscope's names to where a sample keeps them."""
    found: dict[str, str] = {}
    for part in (piece.strip() for piece in text.split(",") if piece.strip()):
        name, equals, where = part.partition("=")
        name, where = name.strip(), where.strip()
        if not equals or name not in MAP_KEYS:
            raise BadInput(f"--map: {part!r} is not NAME=WHERE with NAME one of {', '.join(MAP_KEYS)}")
        if where not in ("id", "epoch") and not (where.startswith("metadata.") and len(where) > 9):
            raise BadInput(f"--map: {name}={where!r}: WHERE is metadata.KEY, id or epoch")
        found[name] = where
    if "length" not in found:
        raise BadInput("--map: length=... is required (where each sample's prompt length is kept)")
    return found


def _lookup(sample: EvalSample, where: str) -> Any:
    if where == "id":
        return sample.id
    if where == "epoch":
        return sample.epoch
    value: Any = sample.metadata or {}
    for key in where.removeprefix("metadata.").split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def mapped_meta(sample: EvalSample, mapping: dict[str, str], task: str) -> dict[str, Any]:
    """The rotscope metadata of another task's sample, read where ``mapping`` says."""
    found = {name: _lookup(sample, where) for name, where in mapping.items()}
    case = found.get("case_id") if found.get("case_id") is not None else sample.id
    return {
        "task": str(found.get("task") or task),
        "case_id": str(case),
        "instance_id": str(found.get("instance_id") if found.get("instance_id") is not None else case),
        "length": found.get("length"),
        "depth": found.get("depth"),
        "position": found.get("position"),
        "trial": found.get("trial") or 0,
    }


def _item(sample: EvalSample, model: str, source: str, mapping: dict[str, str] | None = None,
          task: str = "") -> ImportedItem:  # fmt: skip
    where = f"sample {sample.id} (epoch {sample.epoch})"
    meta: dict[str, Any] = mapped_meta(sample, mapping, task) if mapping else (sample.metadata or {})
    missing = [name for name in NEEDED if name not in meta]
    if missing:
        raise BadInput(
            f"{source}: {where}: no {missing[0]!r} in its metadata (not a rotscope task's log: say where "
            "its samples keep their length with --map length=metadata.KEY, or import a CSV or JSONL table)"
        )
    try:
        unknown = mapping is not None and meta.get("depth") is None and meta.get("position") is None
        position = None if unknown else Position.from_stored(meta.get("position"), float(meta["depth"]))
        length = int(meta["length"])
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{source}: {where}: its length or depth is not a number") from None
    if not 1 <= length <= 1_000_000_000:
        raise BadInput(f"{source}: {where}: length {length} is outside 1 to 1,000,000,000")
    try:
        outcome, score, error = _outcome(sample)
    except BadInput as bad:
        raise BadInput(f"{source}: {bad}") from None
    cost = meta.get("cost")
    return ImportedItem(
        item_id=str(meta["case_id"]),
        instance_id=str(meta["instance_id"]),
        length=length,
        position=position,
        outcome=outcome,
        score=score,
        task=str(meta["task"]),
        model=model,
        prompt_tokens=int(meta["prompt_tokens"]) if meta.get("prompt_tokens") is not None else None,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        control=bool(meta.get("control")),
        trial=int(meta.get("trial") or 0) + (sample.epoch - 1),
        error=error,
        where=where,
    )


def log_items(
    path: Path, source: str, mapping: dict[str, str] | None = None
) -> tuple[list[ImportedItem], str | None]:
    """The items of an Inspect log of a rotscope task and the tokenizer its spans were counted by."""
    log = read_log(path, source)
    samples = log.samples or []
    if not samples:
        raise BadInput(f"{source}: the log holds no samples")
    items = [_item(sample, log.eval.model, source, mapping, log.eval.task) for sample in samples]
    seen: dict[tuple[Any, ...], str] = {}
    for item in items:
        first = seen.setdefault(item.condition, item.where)
        if first != item.where:
            raise BadInput(f"{source}: {item.where}: the same item and condition as {first}")
    if any(item.score is not None for item in items):
        # partial credit over every scored sample, not over those between 0 and 1 alone
        items = [
            replace(item, score=float(item.outcome == "correct"))
            if item.score is None and item.outcome is not None
            else item
            for item in items
        ]
    tokenizer = (log.eval.metadata or {}).get("tokenizer")
    return items, str(tokenizer) if tokenizer else None
