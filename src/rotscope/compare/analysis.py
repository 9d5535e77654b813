"""The comparison of several runs on the same items (``rotscope compare``; its keys:
``rotscope.compare.record``, docs/records.md): a leaderboard per task, every pair of models'
paired difference per length with verdicts Holm-corrected across all pairs x lengths of a task
(``compare.pairwise``), and one
machine-readable row per model x task x length. Built from each run's own summary
(``analysis.summary``) and rows; the runs are checked comparable first (``analysis.comparable``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from rotscope.analysis.summary import build_summary, summary_score
from rotscope.compare.comparable import check_comparable, common_lengths, is_imported
from rotscope.compare.pairwise import (
    ALPHA,
    PAIR_METHOD,
    PREVIOUS_METHOD,
    LengthDifference,
    family_verdicts,
    family_words,
    item_key,
    pair_tests,
    previous_verdicts,
)
from rotscope.compare.ranking import check_definition, definition_of, rank_value
from rotscope.compare.record import (
    ComparedRunEntry,
    Comparison,
    ComparisonRow,
    EffectiveEntry,
    LeaderboardEntry,
    LengthEntry,
    Pair,
    WorstPosition,
)
from rotscope.errors import BadInput
from rotscope.records.cells import Cell
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.rows import Row, on_score
from rotscope.run_meta import RunMeta
from rotscope.store import RunStore

COMPARISON_VERSION = 2
"""The comparison record's version: a change of its shape raises it (2: ``family``, ``rule_note``
and each length's ``test``; version 1 records still validate)."""
CONFIDENCE = 0.95
UNRANKED = ("no-data", "no-signal")
"""Effective-length states that rank below every measured one (nothing to order by)."""


@dataclass(frozen=True)
class ComparedRun:
    """One compared run folder: its name, meta, summary and rows."""

    path: Path
    name: str
    meta: RunMeta
    summary: Summary
    rows: list[Row]
    left_out: tuple[int, ...] = ()
    """The lengths this run measured that another did not (an imported run among them): left out of
    the comparison, which ranks on the cells all measured."""
    own_summary: Summary | None = None
    """Where lengths were left out, the summary on all of this run's rows (its own grid)."""


def _cells(rows: Sequence[Row]) -> set[tuple[str, int, str]]:
    """The (task, length, position) cells a run's probes measured, positions as pairs see them."""
    return {_cell(row) for row in rows if not row["control"]}


def _cell(row: Row) -> tuple[str, int, str]:
    _, length, position, _ = item_key(row)
    return (row["task"], length, position)


def shared_cells(rows: Sequence[Sequence[Row]]) -> set[tuple[str, int, str]]:
    """The (task, length, position) cells every run's probes measured."""
    cells = [_cells(found) for found in rows]
    return set(cells[0]).intersection(*cells[1:]) if cells else set()


def _narrowed(rows: Sequence[Row], cells: set[tuple[str, int, str]]) -> list[Row]:
    """A run's rows in the shared cells (its controls at the shared lengths)."""
    lengths = {length for _, length, _ in cells}
    return [
        row
        for row in rows
        if (row["control"] and int(row["length_target"]) in lengths)
        or (not row["control"] and _cell(row) in cells)
    ]


def load_runs(paths: Sequence[Path], score: str | None = None) -> list[ComparedRun]:
    """Each run folder read once (its summary built from the same rows), named by its folder, or by
    its parent and folder where two share a name; every run on one score, ``score`` (``--score``)
    or the first run's default (``analysis.summary.summary_score``), a run without it refused
    (``BadInput`` naming it), and its rows as the pairs read them (``rows.on_score``). Where one
    is imported (its grid is another harness's), every run is narrowed to the cells (task, length,
    position) all of them measured, and each summary is built from those rows only, so leaderboards
    rank on the same cells; no shared cell is refused (``BadInput``)."""
    counts = Counter(path.name for path in paths)
    names = [path.name if counts[path.name] == 1 else f"{path.parent.name}/{path.name}" for path in paths]
    metas, rows = [], []
    for path in paths:
        with RunStore.read(path) as store:
            metas.append(store.meta())
            rows.append(store.rows())
    cells = shared_cells(rows) if any(is_imported(meta) for meta in metas) else None
    if cells is not None and len(paths) > 1 and not cells:
        raise BadInput(
            f"compare: {', '.join(names)} share no cell (task, length and position): an imported "
            "run compares only where the others measured the same lengths and positions"
        )
    chosen = summary_score(rows[0], score, names[0]) if rows else "accuracy"
    runs = []
    for path, name, meta, found in zip(paths, names, metas, rows, strict=True):
        kept = found if cells is None else _narrowed(found, cells)
        summary_score(kept, chosen, name)  # each run has the score, or it is named
        shared = {length for _, length, _ in cells or ()}
        left_out = tuple(sorted({int(row["length_target"]) for row in found if not row["control"]} - shared))
        with RunStore.read(path) as store:
            summary = build_summary(store, path, kept, chosen)
            own = build_summary(store, path, found, chosen) if cells is not None and left_out else None
        runs.append(ComparedRun(path, name, meta, summary, on_score(kept, chosen), left_out, own))
    return runs


def common_positions(runs: Sequence[ComparedRun]) -> list[str] | None:
    """The positions of the cells the runs were narrowed to (an imported run among them), in the
    first run's order; ``None`` where no run is imported (their grids were checked equal)."""
    if not any(is_imported(run.meta) for run in runs):
        return None
    cells = shared_cells([run.rows for run in runs])
    ordered = [item_key(row)[2] for row in runs[0].rows if not row["control"]]
    return [label for label in dict.fromkeys(ordered) if any(cell[2] == label for cell in cells)]


def rule_note(changed: Sequence[str]) -> str | None:
    """The one line every view prints where a verdict differs from the test before issue 48."""
    if not changed:
        return None
    return (
        f"{len(changed)} verdict{'s' if len(changed) != 1 else ''} differ from rotscope's test "
        f"before issue 48 ({PREVIOUS_METHOD}): " + "; ".join(changed)
    )


def short_length(length: int) -> str:
    """A length as a sentence says it, in the one style of every view: ``16,384``, ``1,600``."""
    return f"{length:,}"


def _listed(lengths: Sequence[int]) -> str:
    words = [short_length(length) for length in lengths]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def pair_sentence(first: str, second: str, lengths: Sequence[LengthDifference]) -> str:
    """The verdicts of a pair in words: "B better than A at 16K and 32K; no difference shown at 4K",
    or "B vs A: no difference shown at 4K and 16K" where no length has a verdict."""
    by_verdict: dict[str, list[int]] = {}
    for entry in lengths:
        by_verdict.setdefault(entry.verdict, []).append(entry.length)
    parts = []
    if "better" in by_verdict:
        parts.append(f"{second} better than {first} at {_listed(by_verdict['better'])}")
    if "worse" in by_verdict:
        parts.append(f"{first} better than {second} at {_listed(by_verdict['worse'])}")
    if "no difference shown" in by_verdict:
        parts.append(f"no difference shown at {_listed(by_verdict['no difference shown'])}")
    if "too few pairs" in by_verdict:
        parts.append(f"too few pairs at {_listed(by_verdict['too few pairs'])}")
    if not parts:
        return f"{second} vs {first}: no length in common"
    named = "better" in by_verdict or "worse" in by_verdict
    # a pair without a verdict names its two models too: with three models its lines tell apart
    return "; ".join(parts) if named else f"{second} vs {first}: " + "; ".join(parts)


def _window(summary: Summary) -> int | None:
    window = (summary.backend or {}).get("context_window")
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None


def _position_label(cell: Cell) -> str:
    label = cell.position or f"{cell.depth:.2f}"
    return f"{cell.filler}/{label}" if cell.filler else str(label)


def worst_position(summary: Summary, task: str) -> WorstPosition | None:
    """The task's position whose mean instance accuracy over the lengths is lowest (the first of
    equals in the run's order of positions), with that mean; ``None`` without a scored cell."""
    scores: dict[str, list[float]] = {}
    for cell in summary.cells:
        if cell.task == task and cell.instance_accuracy is not None:
            scores.setdefault(_position_label(cell), []).append(cell.instance_accuracy)
    if not scores:
        return None
    means = {label: sum(values) / len(values) for label, values in scores.items()}
    label = min(means, key=lambda name: means[name])
    return WorstPosition(position=label, accuracy=means[label])


@dataclass(frozen=True)
class Spend:
    """A task's prompt and completion tokens over its finished calls (each call once) and cost."""

    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    priced: bool


def _spend(rows: Sequence[Row], task: str) -> Spend:
    finished = [row for row in rows if row["task"] == task and row["status"] != "pending"]
    calls = list({row["call_id"]: row for row in finished}.values())
    return Spend(
        prompt_tokens=sum(row["prompt_tokens"] or 0 for row in calls),
        completion_tokens=sum(row["usage_completion_tokens"] or 0 for row in calls),
        cost_usd=float(sum(row["cost"] or 0.0 for row in calls)),
        priced=all(row["cost"] is not None for row in calls),
    )


def _length_entries(
    analysis: TaskAnalysis | None, lengths: Sequence[int], window: int | None
) -> list[LengthEntry]:
    by_length = {line.length: line for line in (analysis.lengths if analysis else None) or []}
    entries = []
    for length in lengths:
        line = by_length.get(length)
        entries.append(
            LengthEntry(
                length=length,
                fraction_of_window=length / window if window else None,
                accuracy=line.instance_accuracy if line else None,
                ci_low=line.ci_low if line else None,
                ci_high=line.ci_high if line else None,
                instances=line.instances if line else 0,
            )
        )
    return entries


def _effective(analysis: TaskAnalysis | None) -> EffectiveEntry:
    effective = analysis.effective_length if analysis else None
    bracket = effective.bracket if effective else None
    return EffectiveEntry(
        definition=effective.definition if effective else None,
        value=effective.value if effective else None,
        state=effective.state if effective else None,
        bracket_low=bracket.low.length if bracket else None,
        bracket_high=bracket.high.length if bracket else None,
        bracket_state=bracket.state if bracket else None,
    )


def rank_key(entry: LeaderboardEntry) -> tuple[int, float, str]:
    """A leaderboard's order: the longer effective length first (a state with nothing to order by
    last, below the shortest length next to last), then the higher base score, then the label."""
    effective = entry.effective_length
    unranked = effective.state in UNRANKED or effective.state is None
    length = -1 if unranked else effective.value or 0
    return (-length, -(entry.base_score if entry.base_score is not None else -1.0), entry.label)


def leaderboard_entry(
    run: ComparedRun, label: str, task: str, lengths: Sequence[int], rank: int = 1
) -> LeaderboardEntry:
    """One model's entry in a task's leaderboard, at ``rank`` (``leaderboard`` sets it once the
    entries are ordered)."""
    analysis = next((a for a in run.summary.tasks if a.task == task), None)
    effective = analysis.effective_length if analysis else None
    window = _window(run.summary)
    spend = _spend(run.rows, task)
    return LeaderboardEntry(
        rank=rank,
        task=task,
        run=run.name,
        label=label,
        model=run.summary.model,
        imported=is_imported(run.meta),
        window=window,
        effective_length=_effective(analysis),
        base_score=effective.base_score if effective else None,
        worst_position=worst_position(run.summary, task),
        lengths=_length_entries(analysis, lengths, window),
        prompt_tokens=spend.prompt_tokens,
        completion_tokens=spend.completion_tokens,
        cost_usd=spend.cost_usd,
        priced=spend.priced,
    )


def leaderboard(
    runs: Sequence[ComparedRun],
    labels: Sequence[str],
    task: str,
    lengths: Sequence[int],
    definition: str | None = None,
) -> list[LeaderboardEntry]:
    """A task's leaderboard: each run's entry, in ``rank_key`` order, ranked from 1; by the named
    ``definition`` first where one is given (``compare.ranking``), ``rank_key`` breaking ties."""
    made = [leaderboard_entry(run, label, task, lengths) for run, label in zip(runs, labels, strict=True)]
    if definition is None:
        entries = sorted(made, key=rank_key)
    else:
        wanted = definition
        by_run = {
            run.name: rank_value(
                definition_of(next((a for a in run.summary.tasks if a.task == task), None), wanted)
            )
            for run in runs
        }
        entries = sorted(made, key=lambda entry: (-by_run[entry.run], rank_key(entry)))
    return [entry.model_copy(update={"rank": rank}) for rank, entry in enumerate(entries, start=1)]


def comparison_rows(board: Sequence[LeaderboardEntry]) -> list[ComparisonRow]:
    """One row per model x task x length (``rotscope.compare.record.ComparisonRow``)."""
    return [
        ComparisonRow(
            run=entry.run,
            model=entry.model,
            task=entry.task,
            rank=entry.rank,
            window=entry.window,
            length=line.length,
            fraction_of_window=line.fraction_of_window,
            accuracy=line.accuracy,
            ci_low=line.ci_low,
            ci_high=line.ci_high,
            instances=line.instances,
            effective_length=entry.effective_length.value,
            effective_state=entry.effective_length.state,
            bracket_low=entry.effective_length.bracket_low,
            bracket_high=entry.effective_length.bracket_high,
            base_score=entry.base_score,
        )
        for entry in board
        for line in entry.lengths
    ]


def labels_of(runs: Sequence[ComparedRun]) -> list[str]:
    """How each run is named in sentences: its model, or its folder where two runs share a model."""
    models = [str(run.summary.model or run.name) for run in runs]
    return models if len(set(models)) == len(models) else [run.name for run in runs]


def _tasks(runs: Sequence[ComparedRun]) -> list[str]:
    first = [analysis.task for analysis in runs[0].summary.tasks]
    others = [{analysis.task for analysis in run.summary.tasks} for run in runs[1:]]
    return [task for task in first if all(task in names for names in others)]


def build_comparison(
    runs: Sequence[ComparedRun], *, alpha: float = ALPHA, definition: str | None = None
) -> Comparison:
    """The comparison record of ``runs`` (checked comparable first: ``BadInput`` naming the first
    field that differs), its leaderboards ranked by ``definition`` where one is named
    (``compare --definition``; ``BadInput`` where no run has it)."""
    check_comparable([run.name for run in runs], [run.meta for run in runs])
    if definition is not None:
        check_definition([run.summary for run in runs], definition)
    labels = labels_of(runs)
    lengths = common_lengths([[line.length for line in run.summary.lengths] for run in runs])
    tasks = _tasks(runs)
    board = [entry for task in tasks for entry in leaderboard(runs, labels, task, lengths, definition)]
    pairs, families, changed = [], [], []
    for task in tasks:
        named = list(combinations(zip(runs, labels, strict=True), 2))
        tested = [pair_tests(first.rows, second.rows, task, lengths) for (first, _), (second, _) in named]
        decided = family_verdicts(tested, alpha)
        count = sum(entry.p_value is not None for found in tested for entry in found)
        families.append(f"{task}: {family_words(len(named), len(lengths), count)}")
        for ((_, first_label), (_, second_label)), found in zip(named, decided, strict=True):
            pairs.append(
                Pair(
                    task=task,
                    first=first_label,
                    second=second_label,
                    lengths=[entry.record() for entry in found],
                    sentence=pair_sentence(first_label, second_label, found),
                )
            )
            changed += [
                f"{second_label} vs {first_label} at {short_length(entry.length)} on {task} was {before}"
                for entry, before in zip(found, previous_verdicts(found, alpha), strict=True)
                if before != entry.verdict
            ]
    return Comparison(
        comparison_version=COMPARISON_VERSION,
        runs=[
            ComparedRunEntry(
                run=run.name,
                label=label,
                model=run.summary.model,
                imported=is_imported(run.meta),
                left_out_lengths=list(run.left_out),
                own_effective={analysis.task: _effective(analysis) for analysis in run.own_summary.tasks}
                if run.own_summary is not None
                else {},
            )
            for run, label in zip(runs, labels, strict=True)
        ],
        tasks=tasks,
        lengths=lengths,
        # set even where null: the record has always carried the key (docs/records.md)
        positions=common_positions(runs),
        score=runs[0].summary.score if runs else "accuracy",
        confidence=CONFIDENCE,
        alpha=alpha,
        pair_method=PAIR_METHOD,
        family="; ".join(families) or None,
        rule_note=rule_note(changed),
        leaderboard=board,
        pairs=pairs,
        rows=comparison_rows(board),
        ranked_by=definition,
    )
