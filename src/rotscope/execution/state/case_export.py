"""A run's cases as case-file lines (``rotscope cases RUN``), and with ``failing`` only the cases that
failed somewhere, each with where it failed (``origin``) and pinned there (``pin``), so a failure
becomes a permanent case that re-runs exactly where it happened.

A failure is a scored row that is not correct (wrong or abstained); an error row is no failure
(the model was never heard). With ``since`` (a baseline run folder of the same experiment) only the
newly failing layouts count: those that fail here and did not fail in the baseline, the cases a
release gate's rollback turns into permanent ones. A replayed recording (``replay``) is written as
the case-file line of its case: its marked evidence as documents and its oracle as recorded,
pinned where it failed (the recorded padding stays in the replay file; the line runs in the case
file's filler). Cases are rebuilt from the run's own config (its families and case
file) and must still ask the question the run asked; a case-file case is written as its own line,
a generated one as ``tasks.case_lines`` writes it. A pinned line also carries where its pieces sat
at each pin and the haystack it was rendered in (``failure_layout``), so run again on the same model
and tokenizer it renders the failing prompt itself.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rotscope.config.experiment import ExperimentConfig, load_config
from rotscope.errors import BadInput
from rotscope.execution.state.failure_layout import (
    RunFiller,
    in_run_haystack,
    listed_order_kept,
    piece_depths,
    run_filler,
)
from rotscope.execution.state.run_folder import CONFIG_FILE, STORE_FILE
from rotscope.plan.workitems import CONTROL_POSITION, select_cases
from rotscope.rows import Row
from rotscope.store import RunStore, imported_note
from rotscope.tasks.case_lines import NotACaseLine, case_line, line_id
from rotscope.tasks.cases import TASK as CASES_TASK
from rotscope.tasks.cases import CaseRecord, parse_case_line, read_case_file
from rotscope.tasks.replay import read_replay_file
from rotscope.tasks.replay.records import TASK as REPLAY_TASK
from rotscope.tasks.replay.records import Recording
from rotscope.types import Case

FAILED = ("incorrect", "abstained")
ABSENT_PIN_DEPTH = 0.0
"""An absent control has no evidence to place: its line is pinned at its length, at depth 0."""


@dataclass
class CaseExport:
    """The lines written, the cases left out with why, and the failing rows they came from."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failing_rows: int = 0
    notes: list[str] = field(default_factory=list)
    """Lines written that will not re-render their failing prompt exactly, each with why."""


def _failed(row: Row) -> bool:
    return row["status"] == "ok" and row["outcome"] in FAILED


def _layout_key(row: Row) -> tuple[Any, ...]:
    return (row["task"], row["case_id"], row["length_target"], _position(row), row["trial"])


def _failing_in(run_dir: Path) -> set[tuple[Any, ...]]:
    """The layouts (task, case, length, position, trial) that failed in another run folder."""
    if not (run_dir / STORE_FILE).is_file():
        raise BadInput(f"--since: {run_dir} is not a run folder (no run.db)")
    with RunStore.read(run_dir) as store:
        return {_layout_key(row) for row in store.rows() if _failed(row)}


def export_cases(run_dir: Path, *, failing: bool, pin: bool = True, since: Path | None = None) -> CaseExport:
    """Case-file lines of the run's cases (``failing``: those with a failing row, with ``origin``
    and, when ``pin``, ``pin``; with ``since``, only rows failing here and not in that run), in
    the run's case order, each valid as a case-file line."""
    if not (run_dir / STORE_FILE).is_file():
        raise BadInput(f"{run_dir}: not a run folder (no run.db)")
    if since is not None and not failing:
        raise BadInput("--since keeps the newly failing layouts: give it with --failing")
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        meta = store.meta()
        run_id = str(meta.get("run_id") or run_dir.name)
    imported = imported_note(meta)
    if imported is not None:
        raise BadInput(f"{run_dir}: {imported}: it holds no cases to write")
    config = load_config(run_dir / CONFIG_FILE, paths_from=Path.cwd())
    before = _failing_in(since) if since is not None else set()
    by_case: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        by_case[(row["task"], row["case_id"])].append(row)
    records = _case_file_records(config)
    filler = run_filler(config, meta.get("corpus")) if failing and pin else None
    export = CaseExport()
    seen_ids: set[str] = set()
    for case in _scored_cases(config):
        case_rows = by_case.pop((case.task, case.case_id), [])
        failed = [row for row in case_rows if _failed(row) and _layout_key(row) not in before]
        if not case_rows or (failing and not failed):
            continue
        export.failing_rows += len(failed)
        where = f"case {case.case_id} of {case.task}"
        if case_rows[0]["question"] != case.question:
            export.skipped.append(f"{where}: asks another question now than in the run (its source changed)")
            continue
        try:
            line = _line(case, records, failing)
        except NotACaseLine as reason:
            export.skipped.append(f"{where}: {reason}")
            continue
        if line["case_id"] in seen_ids:
            line["case_id"] = line_id(f"{line['case_id']}.{case.task}")
        if failing:
            _add_origin(line, failed, run_id, pin)
            if filler is not None:
                _add_layout(line, case, failed, filler, export.notes)
        try:
            parse_case_line(json.dumps(line), f"{run_id}: {where}")
        except BadInput as problem:
            export.skipped.append(f"{where}: not a valid case-file line ({problem})")
            continue
        seen_ids.add(line["case_id"])
        export.lines.append(line)
    for (task, case_id), left in by_case.items():
        if not failing or any(_failed(row) and _layout_key(row) not in before for row in left):
            export.skipped.append(
                f"case {case_id} of {task}: not among the cases the run's config builds now (a family "
                "that plans its own prompts, or a changed source)"
            )
    return export


def _scored_cases(config: ExperimentConfig) -> list[Case]:
    """Every case that gets rows, in plan order: the questions of a bundle each on their own, then
    the recordings of a replay file (a family that plans its own prompts, its cases its own)."""
    cases = [part for case in select_cases(config) for _, part in case.scored_parts()]
    return cases + [recording.case for recording in _recordings(config)]


def _recordings(config: ExperimentConfig) -> list[Recording]:
    if REPLAY_TASK not in config.tasks or not config.replay:
        return []
    return read_replay_file(Path(config.replay).expanduser())[: config.limit]


def _case_file_records(config: ExperimentConfig) -> dict[tuple[str, str], CaseRecord]:
    """The case-file records the run's cases came from, by (task, case id): a case file's lines
    and a replay file's recordings, each as the case-file line it is checked as."""
    found: dict[tuple[str, str], CaseRecord] = {}
    if CASES_TASK in config.tasks and config.cases:
        for record in read_case_file(Path(config.cases).expanduser()):
            found[(CASES_TASK, record.case_id)] = record
    for recording in _recordings(config):
        where = f"replay {recording.case.case_id}"
        found[(REPLAY_TASK, recording.case.case_id)] = parse_case_line(json.dumps(recording.line), where)
    return found


def _line(case: Case, records: dict[tuple[str, str], CaseRecord], failing: bool) -> dict[str, Any]:
    """A case-file case (or a replayed recording) as its own line (with ``failing``, without its
    earlier origin and pin, which the new ones replace), else a generated one."""
    record = records.get((case.task, case.case_id)) if not case.control else None
    if record is not None:
        replaced = {"origin", "pin"} if failing else set()
        return record.model_dump(mode="json", exclude=replaced, exclude_defaults=True) | {
            "case_id": record.case_id,
            "question": record.question,
        }
    return case_line(case)


def _add_origin(line: dict[str, Any], failed: list[Row], run_id: str, pin: bool) -> None:
    """``origin``: each layout where the case failed; ``pin``: the same layouts to run at."""
    ordered = sorted(failed, key=lambda row: (row["length_target"], row["depth"]))
    layouts = list(dict.fromkeys((row["length_target"], _position(row)) for row in ordered))
    model = failed[0]["model"]
    origins = [
        {
            "run": run_id,
            "model": model,
            "length": length,
            "position": position,
            "task": failed[0]["task"],
            "case_id": failed[0]["case_id"],
        }
        for length, position in layouts
    ]
    line["origin"] = origins
    if pin:
        pins = [
            {"length": length, "position": ABSENT_PIN_DEPTH if position == CONTROL_POSITION else position}
            for length, position in layouts
        ]
        line["pin"] = list({json.dumps(p, sort_keys=True): p for p in pins}.values())


def _add_layout(
    line: dict[str, Any], case: Case, failed: list[Row], filler: RunFiller, notes: list[str]
) -> None:
    """Each pin's piece ``depths`` (from a failing row at that layout) and the line's ``haystack``
    (the run's, at the case's variant; a line that names its own keeps it), so the line re-renders
    the failing prompts; a failure it cannot re-render is said in ``notes``."""
    where = f"case {line['case_id']}"
    rows = [row for row in failed if in_run_haystack(row)]
    if len(rows) < len(failed):
        notes.append(f"{where}: rendered in a session or a filler stream of its own; it reruns in a haystack")
    if not rows:
        return
    if "haystack" not in line:
        line["haystack"] = filler.haystack(rows[0]["haystack_variant"] or 0)
    line_ids = {evidence.evidence_id: line_id(evidence.evidence_id) for evidence in case.evidence}
    if any(evidence.source is not None for evidence in case.evidence):
        notes.append(f"{where}: its evidence was a line of a filler document; the line inserts it instead")
        return
    if not case.evidence:
        return
    at = {(row["length_target"], _pin_position(row)): row for row in rows}
    for pin in line.get("pin", []):
        row = at.get((pin["length"], pin["position"]))
        if row is None:
            continue
        pin["depths"] = piece_depths(row, line_ids)
        if not listed_order_kept(row, line, line_ids):
            notes.append(
                f"{where} at length {pin['length']} {pin['position']}: a distractor shared a line end with "
                "a document it preceded; the line lists documents first"
            )
    if any("depths" not in pin for pin in line.get("pin", [])):
        for pin in line.get("pin", []):
            pin.pop("depths", None)  # every pin or none: the others are placed as one block


def _pin_position(row: Row) -> float | str:
    position = _position(row)
    return ABSENT_PIN_DEPTH if position == CONTROL_POSITION else position


def _position(row: Row) -> float | str:
    """A row's position as a case file writes it: its name (or ``@N``), else its depth."""
    return row["position"] if row["position"] is not None else float(row["depth"])
