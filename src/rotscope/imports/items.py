"""Per-item results brought in from another harness, as the run store's rows and metadata: one
``ImportedItem`` per outcome of a question in one condition (a length and a position), checked
as the file is read (``imports.table``, ``integrations.inspect.log_import``), then turned into the
rows and metadata of a run folder every view reads (``store_rows``, ``import_meta``).

An imported row has no prompt, no token spans and no verification: its ``question``, ``expected``
and ``spans`` are empty, its ``prompt_digest`` names no stored prompt, and the folder's metadata
says where it came from (``store.IMPORTED_KEY``), which every view repeats."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from rotscope._version import __version__
from rotscope.position import Position
from rotscope.rows import PlannedRow, ResultValues
from rotscope.run_meta import RunMeta
from rotscope.store import IMPORTED_KEY
from rotscope.types import BackendDescription, ClaimReport
from rotscope.types.clusters import IMPORTED_BACKEND

UNKNOWN_POSITION = "unknown"
"""The ``position`` of a row whose place in its context the file does not say."""
UNKNOWN_DEPTH = 0.5
"""The depth column of such a row (the store needs a number): it is named ``unknown`` wherever it
is shown, and pairs only with rows of unknown position."""
DEFAULT_TASK = "imported"
"""The task of rows whose file has no ``task`` column."""
BACKEND = IMPORTED_BACKEND
"""The ``backend`` column of every imported row (its instances cluster across tasks)."""
SCORE_MEASURE = "score"
"""The partial-credit measure of a file whose ``correct`` holds scores between 0 and 1: each cell
then reports ``mean_score`` beside its accuracy (a score of 1 counts as correct)."""


@dataclass(frozen=True)
class ImportedItem:
    """One outcome of one question in one condition, as read from the file."""

    item_id: str
    """The question (stored as the row's ``case_id``: the same question at two lengths pairs)."""
    instance_id: str
    """What intervals and paired gaps cluster on (questions sharing a document share one)."""
    length: int
    """The prompt length in tokens, as the other harness counted it."""
    position: Position | None
    """Where the evidence was; ``None`` when the file does not say."""
    outcome: str | None
    """``correct``, ``incorrect`` or ``abstained``; ``None`` for an item that failed there."""
    score: float | None = None
    """The score in [0, 1] where the file gives one that is not 0 or 1."""
    task: str = DEFAULT_TASK
    model: str | None = None
    prompt_tokens: int | None = None
    cost_usd: float | None = None
    control: bool = False
    """An evidence-absent control (Inspect logs of rotscope tasks carry them)."""
    haystack_variant: int | None = None
    """The haystack variant the prompt read, where the file says (a rotscope export does): the
    clusters then follow the run's own rule (``types.clusters``)."""
    trial: int = 0
    """The repeat of the question in this condition (an Inspect log's trial and epoch)."""
    error: str | None = None
    """Why the item has no outcome (a sample that failed in its harness)."""
    where: str = ""
    """Where in the file it came from (``line 12``, ``sample ID``), for messages."""
    likelihood: Mapping[str, float | int] | None = None
    """The gold answer's likelihood columns where the file gives them (``LIKELIHOOD_COLUMNS``, as
    ``rotscope export`` writes them), stored as a run stores its own."""

    @property
    def stored_position(self) -> tuple[float, str | None]:
        """The row's ``depth`` and ``position`` columns."""
        if self.position is None:
            return UNKNOWN_DEPTH, UNKNOWN_POSITION
        fraction = self.position.fraction
        return (UNKNOWN_DEPTH if fraction is None else fraction), self.position.stored

    @property
    def place(self) -> str:
        """The position as views name it."""
        depth, position = self.stored_position
        return Position.from_stored(position, depth).label

    @property
    def condition(self) -> tuple[str, str, int, str | None, float, bool, int]:
        """What one question may be at only once: (task, item, length, position name, exact depth,
        control, trial). The depth is the number itself: 0.011 and 0.014 (a sigmoid-spaced grid)
        are two conditions, though two places name both 0.01."""
        depth, position = self.stored_position
        return (self.task, self.item_id, self.length, position, depth, self.control, self.trial)


def row_id(item: ImportedItem) -> str:
    """A stable id of the item's row, from its condition."""
    return "imp-" + hashlib.sha256(json.dumps(item.condition).encode("utf-8")).hexdigest()[:24]


def planned_row(item: ImportedItem, order: int, run_id: str, model: str) -> PlannedRow:
    """The row's planned columns (``store.PLANNED_COLUMNS``): no prompt, no spans, no question."""
    depth, position = item.stored_position
    identifier = row_id(item)
    return {
        "item_id": identifier,
        "call_id": identifier,
        "run_id": run_id,
        "plan_order": order,
        "task": item.task,
        "case_id": item.item_id,
        "instance_id": item.instance_id,
        "control": int(item.control),
        "model": model,
        "backend": BACKEND,
        "length_target": item.length,
        "prompt_tokens": item.prompt_tokens if item.prompt_tokens is not None else item.length,
        "haystack_tokens": 0,
        "depth": depth,
        "position": position,
        "spans": "[]",
        "trial": item.trial,
        "seed": 0,
        "prompt_digest": "",
        "question": "",
        "expected": "",
        "slices": "{}",
        "filler": None,
        "haystack_variant": item.haystack_variant,
        "fault": None,
        "evidence_lost": None,
    }


def result_values(item: ImportedItem) -> ResultValues:
    """The row's result columns: its outcome, or the error its harness recorded."""
    if item.outcome is None:
        error = item.error or "no outcome in the imported file"
        return {"status": "error", "error": error, "cost": item.cost_usd}
    # a claim report as a scorer stores one, with the score as its partial credit
    report = asdict(ClaimReport(partial={SCORE_MEASURE: item.score})) if item.score is not None else None
    values: ResultValues = {
        "status": "ok",
        "outcome": item.outcome,
        "category": None,  # another harness's outcome is not a failure category
        "usage_prompt_tokens": item.prompt_tokens,
        "cost": item.cost_usd,
        "claim_report": json.dumps(report) if report is not None else None,
    }
    likelihood = item.likelihood or {}
    if "answer_logprob" in likelihood:
        values["answer_logprob"] = float(likelihood["answer_logprob"])
    if "answer_tokens" in likelihood:
        values["answer_tokens"] = int(likelihood["answer_tokens"])
    if "first_token_prob" in likelihood:
        values["first_token_prob"] = float(likelihood["first_token_prob"])
    if "absent_logprob" in likelihood:
        values["absent_logprob"] = float(likelihood["absent_logprob"])
    return values


def import_meta(
    items: Sequence[ImportedItem],
    *,
    run_id: str,
    source: str,
    kind: str,
    digest: str,
    tokenizer: str | None,
    context_window: int | None = None,
    base_lengths: Sequence[int] | None = None,
) -> RunMeta:
    """The run folder's metadata: a minimal experiment (its model, tasks and lengths), how lengths
    were counted, the model's context window where the file gives it, and ``imported``: the file,
    its format and digest, and what the folder lacks. ``base_lengths`` (``--base-lengths``) are the
    lengths whose mean score is the base of the relative effective length, as a run's
    ``analysis.base_lengths``."""
    model = model_of(items)
    backend: BackendDescription = {
        "provider": BACKEND,
        "model": model,
        "tokenizer": tokenizer or "unknown: as imported",
    }
    if context_window is not None:
        backend["context_window"] = context_window
    tasks = list(dict.fromkeys(item.task for item in items))
    lengths = sorted({item.length for item in items})
    return {
        "run_id": run_id,
        "rotscope_version": __version__,
        "config": {
            "name": run_id,
            "model": model,
            "tasks": tasks,
            "lengths": lengths,
            **({"analysis": {"base_lengths": list(base_lengths)}} if base_lengths else {}),
        },
        # what a finished store holds (``run_folder._unstarted``): the file's digest is the run's
        "config_digest": digest,
        "model": model,
        "backend": backend,
        "corpus": None,
        "rejected": [],
        "rejections": [],
        "tokens": {"naive_prefill": 0, "lower_bound": 0},
        "order": "as imported",
        IMPORTED_KEY: {
            "source": source,
            "format": kind,
            "sha256": digest,
            "items": len(items),
            "ignored_columns": [],
        },
    }


def model_of(items: Iterable[ImportedItem]) -> str:
    """The model the items name (the file's ``model`` column), ``imported`` when none does."""
    return next((item.model for item in items if item.model), "imported")
