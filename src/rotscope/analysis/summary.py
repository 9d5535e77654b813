"""The summary JSON of a run (its keys: ``rotscope.records.summary``, docs/records.md), built from the
run store and the statistics."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rotscope.analysis.agreement import agreements
from rotscope.analysis.cache_checks import summarise_checks
from rotscope.analysis.cases import case_results
from rotscope.analysis.cells import cell, cell_key, cell_stats, counts, length_cell
from rotscope.analysis.fillers import SESSION, filler_gaps
from rotscope.analysis.headline import effective_lengths_by_task
from rotscope.analysis.rejections import with_rejections
from rotscope.analysis.separations import separation_cells
from rotscope.analysis.tasks import curve_effective_lengths, empty_task_analysis, task_analysis
from rotscope.errors import BadInput
from rotscope.position import Position
from rotscope.records.cells import Cell, CellKey, Control, EvidenceOnly
from rotscope.records.run import (
    CellOver,
    Cost,
    ErrorCap,
    Execution,
    Judge,
    Overhead,
    ReplicaLine,
    Timing,
    TokenCounts,
    Tokens,
)
from rotscope.records.summary import Imported, Items, Rejection, Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.rows import Row, ScoreName, error_rate, group_by, has_likelihood, has_replies, on_score, scored
from rotscope.stats import BASE_LENGTHS
from rotscope.store import IMPORTED_KEY, RunStore, imported_note, session_usd
from rotscope.tasks import TASKS
from rotscope.types import EVIDENCE_ONLY_POSITION

DEFAULT_MAX_ERROR_RATE = 0.05


def harness_overhead(rows: Iterable[Row], model: str | None) -> Overhead | None:
    """Provider-reported prompt tokens minus the local count, per call: the fixed cost of the
    server's template and system prompt that rotscope's lengths do not include."""
    per_call = {
        row["call_id"]: row["usage_prompt_tokens"] - row["prompt_tokens"]
        for row in scored(rows)
        if row["usage_prompt_tokens"]
    }
    if not per_call:
        return None
    differences = list(per_call.values())
    return Overhead(
        model=model,
        calls=len(differences),
        median=statistics.median(differences),
        min=min(differences),
        max=max(differences),
    )


def token_counts(meta: Mapping[str, Any], rows: list[Row]) -> TokenCounts:
    """How lengths were counted (``approximate`` when no tokenizer of the model was at hand)."""
    backend = meta.get("backend") or {}
    return TokenCounts(
        method=backend.get("token_count", "exact"),
        tokenizer=backend.get("tokenizer"),
        overhead=harness_overhead(rows, meta.get("model")),
    )


def _pool_offset_depths(rows: list[Row]) -> list[Row]:
    """Rows of an absolute offset (``@N``) with the mean depth of their (task, length, offset): the
    depth N reaches differs a little between cases (their fixed parts differ), but one offset at
    one length is one cell."""
    depths: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for row in rows:
        if Position.from_stored(row["position"], row["depth"]).offset_tokens is not None:
            depths[(row["task"], row["length_target"], row["position"])].append(row["depth"])
    means = {key: sum(values) / len(values) for key, values in depths.items()}
    return [
        {**row, "depth": means[(row["task"], row["length_target"], row["position"])]}
        if (row["task"], row["length_target"], row["position"]) in means
        else row
        for row in rows
    ]


def _error_cap(rows: list[Row], cells: list[Cell], cap: float) -> ErrorCap:
    """The run's error rate against the configured cap, and the cells above the cap."""
    rate = error_rate(rows)
    return ErrorCap(
        max_error_rate=cap,
        error_rate=rate,
        exceeded=rate > cap,
        cells_over=[
            _cell_over(cell, over) for cell in cells if (over := cell.error_rate) is not None and over > cap
        ],
    )


def _cell_over(cell: Cell, rate: float) -> CellOver:
    over = CellOver(
        task=cell.task,
        length=cell.length,
        depth=cell.depth,
        position=cell.position,
        error_rate=rate,
    )
    # filler is absent, not null, for a cell in static filler (as in the cell)
    return over.model_copy(update={"filler": cell.filler}) if "filler" in cell.model_fields_set else over


def _spend(rows: list[Row], config: Mapping[str, Any], meta: Mapping[str, Any]) -> Cost:
    """What the run spent: its rows' calls and the session the model wrote for it, if it did."""
    finished = [row for row in rows if row["status"] != "pending"]
    session = session_usd(meta)
    return Cost(
        usd=sum(row["cost"] or 0.0 for row in finished) + session,
        session_usd=session,
        # a note of the model's session without a price leaves the run's cost unknown too
        priced=all(row["cost"] is not None for row in finished)
        and bool((meta.get("session_generation") or {}).get("priced", True)),
        max_cost=config.get("max_cost"),
        cached_responses=sum(bool(row["cached_response"]) for row in finished),
    )


def _tokens(planned: Mapping[str, int], called: list[Row]) -> Tokens:
    """Prompt tokens as planned, and evaluated and read from a cache over the calls whose cached
    tokens are known (reported by the engine or provider, or counted from a server's log); the calls
    whose are not count in ``cached_unknown``, their prompt tokens in neither sum. Both sums are
    ``None`` when calls were made and none of them is known: a 0 there would read as a measurement."""
    known = [row for row in called if row["cached_tokens"] is not None]
    unknown = bool(called) and not known
    return Tokens(
        naive_prefill=planned.get("naive_prefill", 0),
        lower_bound=planned.get("lower_bound", 0),
        evaluated=None
        if unknown
        else sum((row["usage_prompt_tokens"] or 0) - (row["cached_tokens"] or 0) for row in known),
        cached=None if unknown else sum(row["cached_tokens"] or 0 for row in known),
        cached_unknown=len(called) - len(known),
        cached_from_log=sum(row["cached_source"] == "server_log" for row in known),
    )


def _judge(rows: list[Row], config: Mapping[str, Any]) -> Judge | None:
    if not config.get("judge"):
        return None
    verdicts = Counter(verdict for row in rows if (verdict := row["judge_verdict"]) is not None)
    return Judge(
        model=config["judge"]["model"],
        # every judged row records its judge prompt's digest
        prompt_sha256=sorted(
            {str(row["judge_prompt_sha256"]) for row in rows if row["judge_verdict"] is not None}
        ),
        verdicts=dict(sorted(verdicts.items())),
    )


def _control_kind(task: str) -> str:
    """What the family's evidence-absent control measures (``FamilyHooks.control_kind``)."""
    family = TASKS.find(task)
    return family.hooks.control_kind if family is not None else "abstention"


def _layout_rank(task: str, position: str | None) -> int | None:
    """Where a named layout stands in its family's own order (``None`` for families without one)."""
    family = TASKS.find(task)
    order = family.hooks.layout_order if family is not None else ()
    if not order:
        return None
    return order.index(position) if position in order else len(order)


def _probe_cell(key: CellKey, rows: list[Row]) -> Cell:
    """A probe cell; one of a family whose depth names a region (``aggregation``) also says which
    region its pieces reached: the first and last depth of their spans, measured, not asked."""
    found = cell(key, rows)
    family = TASKS.find(key.task)
    if family is not None and family.hooks.region:
        depths = [span["depth"] for row in rows for span in json.loads(row["spans"] or "[]")]
        return Cell(**found.model_dump(), region=[min(depths), max(depths)] if depths else None)
    return found


def _split_session(rows: list[Row]) -> list[tuple[bool, list[Row]]]:
    """Rows in static filler, then those in session filler (the same control in two fillers is
    two entries); a part with no rows is left out."""
    parts = [
        (False, [r for r in rows if r["filler"] != SESSION]),
        (True, [r for r in rows if r["filler"] == SESSION]),
    ]
    return [(session, part) for session, part in parts if part]


def _rowless_tasks(
    task_order: list[str], analysed: set[str], config: Mapping[str, Any], rejections: list[Rejection]
) -> list[TaskAnalysis]:
    """An analysis for each task the experiment named that has no probe row: ``all-rejected`` where
    the verifier rejected its prompts, else ``empty``; shown as such in every view, not dropped."""
    rejected: dict[str, list[int]] = defaultdict(list)
    for rejection in rejections:
        if not rejection.control:
            rejected[rejection.task].append(rejection.length)
    asked = min(config.get("lengths") or [256])
    return [
        empty_task_analysis(task, "all-rejected", min(rejected[task]))
        if rejected.get(task)
        else empty_task_analysis(task, "empty", asked)
        for task in task_order
        if task not in analysed
    ]


def _imported(meta: Mapping[str, Any]) -> Imported | None:
    """A folder made by ``rotscope import``: the file, and what it lacks (every view says so)."""
    note = imported_note(meta)
    return None if note is None else Imported(**meta[IMPORTED_KEY], note=note)


def _controls(controls: list[Row]) -> list[Control]:
    """The evidence-absent controls per task and length, in static then session filler."""
    found = []
    for (task, length), by_length in group_by(controls, "task", "length_target").items():
        for session, group in _split_session(by_length):
            control = Control(
                task=task,
                length=length,
                kind=_control_kind(task),
                **counts(group).model_dump(),
                hallucinated=sum(row["category"] == "hallucinated" for row in group),
            )
            # filler is absent, not null, in static filler
            found.append(control.model_copy(update={"filler": SESSION}) if session else control)
    return found


def _execution(meta: Mapping[str, Any]) -> Execution:
    options = (meta.get("backend") or {}).get("options", {})
    return Execution(
        order=meta.get("order"),
        # Which reuse ran: the correctness of reuse is tested, but a reader should know.
        prefix_cache=options.get("prefix_cache"),
        state_cache_mb=options.get("state_cache_mb"),
        # A local engine's mode (llama.cpp extra buffers), why, and its worker's crashes.
        engine=meta.get("engine"),
        replicas=replica_lines(meta.get("executor") or {}),
    )


def replica_lines(executor: Mapping[str, Any]) -> list[ReplicaLine] | None:
    """Each replica's calls, failures and times taken out, summed over the run's sessions (a run
    from before health was kept has none)."""
    if executor.get("kind") != "replicas":
        return None
    sessions = executor.get("sessions") or [{"health": executor.get("health") or []}]
    lines: dict[str, ReplicaLine] = {}
    for session in sessions:
        for health in session.get("health") or []:
            url = str(health["replica"])
            outs = health.get("taken_out") or []
            seen = lines.get(url) or ReplicaLine(replica=url, calls=0, failures=0, taken_out=0)
            last = outs[-1] if outs else None
            lines[url] = seen.model_copy(
                update={
                    "calls": seen.calls + int(health["calls"]),
                    "failures": seen.failures + int(health["failures"]),
                    "taken_out": seen.taken_out + len(outs),
                    "reason": str(last["reason"]) if last else seen.reason,
                    "at_call": int(last["call"]) if last else seen.at_call,
                }
            )
    return list(lines.values()) or None


def summary_score(rows: list[Row], asked: str | None, run: str) -> ScoreName:
    """The score a summary stands on: ``asked`` (``--score``), else accuracy where the run has
    replies and likelihood where it kept only likelihoods. Bad input where the run lacks the score
    asked for."""
    if asked is None:
        return "likelihood" if has_likelihood(rows) and not has_replies(rows) else "accuracy"
    if asked == "likelihood":
        if not has_likelihood(rows):
            raise BadInput(
                f"--score likelihood: {run} has no answer likelihoods (it ran with --score accuracy, "
                "its backend cannot read them, its prompts have no one gold answer to read, or "
                "nothing is scored yet)"
            )
        return "likelihood"
    if asked == "accuracy":
        if has_likelihood(rows) and not has_replies(rows):
            raise BadInput(
                f"--score accuracy: {run} kept only likelihoods (run --score likelihood): no replies"
            )
        return "accuracy"
    raise BadInput(f"--score: {asked!r} is not one of accuracy, likelihood")


def build_summary(
    store: RunStore, run_dir: Path, rows: list[Row] | None = None, score: str | None = None
) -> Summary:
    """The run's summary, of ``rows`` where given (a subset of the store's: ``rotscope compare``
    narrows an imported run to the cells the compared runs share), else of all its rows, on
    ``score`` (``summary_score``): the typed record every view reads
    (``rotscope.records.summary.Summary``, docs/records.md). Cells, lengths, tasks, cases and the
    evidence-only results stand on the score; counts, tokens, cost, controls and the error cap on
    every row."""
    # the stored metadata as JSON: the summary's records validate it
    meta: Mapping[str, Any] = store.meta()
    config = meta.get("config") or {}
    rows = _pool_offset_depths(store.rows() if rows is None else rows)
    if meta.get(IMPORTED_KEY):
        # An imported row's outcome is no failure category (folders imported before said it was).
        rows = [{**row, "category": None} for row in rows]
    chosen = summary_score(rows, score, run_dir.name)
    rejections = [Rejection.model_validate(rejection) for rejection in meta.get("rejections", [])]
    all_probes = [row for row in rows if not row["control"]]
    probes = on_score(all_probes, chosen)
    evidence_only = on_score(
        [row for row in rows if row["control"] and row["position"] == EVIDENCE_ONLY_POSITION], chosen
    )
    controls = [row for row in rows if row["control"] and row["position"] != EVIDENCE_ONLY_POSITION]
    per_case = case_results(probes, evidence_only)
    cells = with_rejections(
        [
            _probe_cell(cell_key(task, length, depth, position, filler, _layout_rank(task, position)), group)
            for (task, length, depth, position, filler), group in group_by(
                probes, "task", "length_target", "depth", "position", "filler"
            ).items()
        ],
        rejections,
        lambda task, length, depth, position, filler: cell(
            cell_key(task, length, depth, position, filler, _layout_rank(task, position)), []
        ),
    )
    per_length = {
        length: length_cell(length, group) for (length,), group in group_by(probes, "length_target").items()
    }
    done = scored(rows)
    # One call's usage and latency once, though each of its questions is a row; replies from the
    # response cache cost no tokens.
    calls = list({row["call_id"]: row for row in done}.values())
    called = [row for row in calls if not row["cached_response"]]
    # A run stored before the analysis section existed takes the default base lengths.
    base_lengths = tuple((config.get("analysis") or {}).get("base_lengths") or BASE_LENGTHS)
    task_order: list[str] = config.get("tasks") or []
    by_separation = separation_cells(probes, task_order)
    by_task = sorted(
        group_by(probes, "task").items(),
        key=lambda item: task_order.index(item[0][0]) if item[0][0] in task_order else len(task_order),
    )
    analyses = [task_analysis(task, group, base_lengths) for (task,), group in by_task]
    analyses += _rowless_tasks(task_order, {analysis.task for analysis in analyses}, config, rejections)
    analyses.sort(key=lambda a: task_order.index(a.task) if a.task in task_order else len(task_order))
    return Summary(
        run=run_dir.name,
        model=meta.get("model"),
        task=",".join(task_order or dict.fromkeys(row["task"] for row in rows)),
        imported=_imported(meta),
        score=chosen,
        kept=meta.get("score"),
        likelihood_unread=meta.get("score") == "both" and has_replies(rows) and not has_likelihood(rows),
        agreement=agreements(all_probes),
        cells=cells,
        lengths=list(per_length.values()),
        # accuracy by the distance between the facts to combine, where the run has that axis
        **({} if by_separation is None else {"separations": by_separation}),
        effective_length=curve_effective_lengths(per_length, probes, base_lengths),
        # Each task's own effective length, led by the hardest probe in band (analysis/headline.py).
        effective_lengths=effective_lengths_by_task(analyses),
        tasks=analyses,
        # The same probe in static and session filler, paired on cases (analysis/fillers.py).
        filler_gap=filler_gaps(probes),
        controls=_controls(controls),
        evidence_only=[
            EvidenceOnly(task=task, **counts(group).model_dump(), accuracy=cell_stats(group).accuracy)
            for (task,), group in group_by(evidence_only, "task").items()
        ],
        cases=per_case,
        capability_failures=[entry.case_id for entry in per_case if entry.capability_failure],
        positional_failures=[entry.case_id for entry in per_case if entry.positional_failure],
        high_risk=sum(entry.forbidden_claims for entry in per_case),
        items=Items(
            total=len(rows),
            done=len(done),
            errors=sum(row["status"] == "error" for row in rows),
            rejected_prompts=len(meta.get("rejected", [])),
        ),
        rejections=rejections,
        tokens=_tokens(meta.get("tokens", {}), called),
        token_counts=token_counts(meta, rows),
        timing=Timing(
            latency_s=sum(row["latency_s"] or 0.0 for row in calls),
            started=min((row["created_at"] for row in rows), default=None),
            finished=max((row["finished_at"] for row in rows if row["finished_at"]), default=None),
        ),
        execution=_execution(meta),
        error_cap=_error_cap(rows, cells, config.get("max_error_rate", DEFAULT_MAX_ERROR_RATE)),
        cost=_spend(rows, config, meta),
        judge=_judge(rows, config),
        corpus=meta.get("corpus"),
        # What the model's own writing of its session cost (filler.assistant: model), else null.
        session_generation=meta.get("session_generation"),
        backend=meta.get("backend"),
        config=meta.get("config"),
        manifest_digest=meta.get("manifest_digest"),
        plan=meta.get("plan"),
        cache_control=summarise_checks(
            store.cache_checks(),
            deterministic=(meta.get("cache_control") or {}).get("deterministic", False),
            alpha=(config.get("gate") or {}).get("alpha", 0.05),
        ),
    )


def load_summary(run_dir: Path | str, score: str | None = None) -> Summary:
    """The typed summary (``rotscope.records.summary.Summary``, docs/records.md) of a run folder on
    ``score`` (``summary_score``); its ``model_dump()`` is the summary JSON."""
    run_dir = Path(run_dir)
    with RunStore.read(run_dir) as store:
        return build_summary(store, run_dir, score=score)
