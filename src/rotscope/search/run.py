"""``rotscope run CONFIG --search``: the adaptive effective-length search (``plan.search``) run
through the ordinary runner. Each step (a length and a window of instances) is a run folder of its
own under ``DIR/steps``, with the run store, lock, resume and error rows of any run; the search's
decisions are taken again from those stored results on ``--resume``, so a resumed search (with a
larger budget, or after a Ctrl-C) takes the decisions an uninterrupted one takes.

``DIR/search.json`` holds the outcome: the decisions in order, the bracket and verdict, the calls
and tokens spent, what the fixed grid of the same resolution would have cost (``fixed_grid``: the
grid a user would have run, every one of the cap's cases at every length and the base;
``fixed_grid_hindsight``: the same lengths with only as many instances as the search needed at the
length it decided with the most), and the method.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import yaml

from rotscope._util.inside import inside
from rotscope._util.resume_hint import resume_command
from rotscope.backends import create_backend
from rotscope.config.experiment import ExperimentConfig, build_config, load_config
from rotscope.errors import BadInput, write_output
from rotscope.execution.state.run_folder import CONFIG_FILE, STORE_FILE, default_run_dir, has_store
from rotscope.execution.workflows.runner import (
    BudgetReached,
    EngineStopped,
    Interrupted,
    Reporter,
    resume_experiment,
    run_experiment,
)
from rotscope.plan.workitems import build_plan
from rotscope.rows import Row, ScoreName, on_score, value
from rotscope.search.decisions import (
    BASE,
    BudgetSpent,
    Decision,
    SearchResult,
    SearchSettings,
    Step,
    fixed_grid_calls,
    log_grid,
    run_search,
)
from rotscope.search.record import (
    FixedGrid,
    SearchBracket,
    SearchBudget,
    SearchDecision,
    SearchDefinition,
    SearchRecord,
)
from rotscope.search.setup import (
    case_ids,
    prepare_search,
    search_reply_budget,
    search_settings,
    settings_of,
)
from rotscope.store import RunStore

SEARCH_FILE = "search.json"
Reporters = Callable[[], Reporter | None]
"""A new progress reporter for each step's run (each counts its own items)."""
METHOD = (
    "bisection on a log grid twice as fine as the resolution; per length a hedged-capital betting "
    "confidence sequence (Waudby-Smith & Ramdas 2023) over instance means (relative definitions on "
    "the paired margin score - F x base), valid under optional stopping; alpha split evenly over "
    "every grid length (Bonferroni)"
)


def is_search_folder(run_dir: Path) -> bool:
    return (
        (run_dir / CONFIG_FILE).is_file()
        and not (run_dir / STORE_FILE).is_file()
        and (run_dir / "steps").is_dir()
    )


def _step_config(config: ExperimentConfig, step: Step, max_cost: float | None) -> ExperimentConfig:
    data = config.model_dump(mode="json")
    data.update(lengths=[step.length], case_offset=step.start, limit=step.count, search=None, out=None)
    data["max_cost"] = max_cost
    return build_config(data, "search step")


def _finished(run_dir: Path) -> bool:
    """Whether a step's stored rows are all answered; a store with no rows is no finished step."""
    with RunStore.read(run_dir) as store:
        rows = store.rows()
    return bool(rows) and all(row["status"] == "ok" for row in rows)


def decision_score(config: ExperimentConfig) -> ScoreName:
    """The score the search decides on: the gold answer's likelihood where the run keeps only it
    (``score: likelihood``), else accuracy. The confidence sequence holds for any mean in [0, 1]."""
    return "likelihood" if config.score == "likelihood" else "accuracy"


def _means(
    rows: list[Row], case_ids: list[str], step: Step, folder: Path, score: ScoreName = "accuracy"
) -> list[float]:
    """Each case's mean score (``rows.value`` on ``score``: correctness, or the gold answer's
    probability) over its scored (non-control) rows, in case order (the step's rows are all
    answered: a step with error rows never reaches the search). A case with no scored row had every
    layout rejected at this length (or, on the likelihood, none read): that is no score (never a
    0), so the length cannot be measured and the search stops, naming it."""
    outcomes: dict[str, list[float]] = {case_id: [] for case_id in case_ids}
    for row in on_score(rows, score):
        if not row["control"] and row["status"] == "ok" and row["case_id"] in outcomes:
            outcomes[row["case_id"]].append(value(row))
    unmeasured = [case_id for case_id, values in outcomes.items() if not values]
    if unmeasured:
        with RunStore.read(folder) as store:
            rejected = store.meta().get("rejected") or []
        first = f"; first rejection: {rejected[0]}" if rejected else ""
        raise BadInput(
            f"search: at {step.length:,} tokens every layout of {len(unmeasured)} of the step's "
            f"{len(case_ids)} instances was rejected ({', '.join(unmeasured[:3])}"
            f"{', ...' if len(unmeasured) > 3 else ''}){first}; a rejected layout is no score, so "
            "this length cannot be measured: start search.range above it, or choose depths every "
            "instance fits at"
        )
    return [sum(v) / len(v) for v in outcomes.values()]


@dataclass
class SearchInterrupted(Interrupted):
    """Ctrl-C during a search, whichever part was running (a step's planning, its calls, the
    search's decisions between steps): every finished step is kept in the search folder, and
    ``--resume`` of the folder goes on. ``done``/``total`` are the interrupted step's items (0 of 0
    between steps)."""

    steps: int = 0
    """Steps finished before the interruption."""
    step: str | None = None
    """The step that was running, when one was."""

    def line(self) -> str:
        within = ""
        if self.step and self.total:
            within = f"; in step {self.step} {self.done} of {self.total} items done and kept"
        elif self.step:
            within = f"; step {self.step} was being planned, none of its calls made"
        return (
            f"interrupted: the search in {self.run_dir} keeps its {self.steps} finished step(s){within}; "
            f"continue with: {resume_command(self.run_dir)}"
        )


class _Steps:
    """Runs (or resumes, or reads) each step's run folder and keeps what it spent."""

    def __init__(self, config: ExperimentConfig, run_dir: Path, case_ids: list[str], reporter: Reporters):
        self.config, self.run_dir, self.case_ids, self.reporter = config, run_dir, case_ids, reporter
        self.count = 0
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self.folders: list[str] = []
        self.haystacks: int | None = None
        """The fewest haystack variants a step's instances were spread over, where they were fewer
        than its instances' indices reach (instances then share a haystack); ``None``: none shared."""

    def _remaining(self) -> float | None:
        """What is left of the search's USD budget (``max_cost``) for the next step."""
        return None if self.config.max_cost is None else self.config.max_cost - self.cost

    def __call__(self, step: Step) -> list[float]:
        self.count += 1
        name = f"{self.count:02d}-L{step.length}-i{step.start}-{step.start + step.count}"
        folder = self.run_dir / "steps" / name
        inside(self.run_dir, folder, what="search step")  # a link planted at steps/ leads no run out
        remaining = self._remaining()
        try:
            if not has_store(folder):  # a store whose creation was cut short is no step begun
                if remaining is not None and remaining <= 0:
                    raise BudgetSpent(name)
                config = _step_config(self.config, step, remaining)
                run_experiment(config, run_dir=folder, reporter=self.reporter(), allow_empty=True)
            elif not _finished(folder):
                if remaining is not None and remaining <= 0:
                    raise BudgetSpent(name)
                resume_experiment(folder, reporter=self.reporter(), max_cost=remaining)
        except Interrupted as stop:
            raise SearchInterrupted(self.run_dir, stop.done, stop.total, self.count - 1, name) from None
        except KeyboardInterrupt:  # in the step's planning or store creation, before its calls
            raise SearchInterrupted(self.run_dir, 0, 0, self.count - 1, name) from None
        except BudgetReached:
            self._spend(folder, name)
            raise BudgetSpent(name) from None
        rows = self._spend(folder, name)
        self._count_haystacks(folder, step)
        failed = sum(row["status"] != "ok" for row in rows)
        if failed:  # an error is never a wrong answer: the search waits for --resume to retry them
            done = len(rows) - failed
            reason = f"step {name} has {failed} error rows (model or engine failures), retried on --resume"
            raise EngineStopped(self.run_dir, done, len(rows), reason)
        cases = self.case_ids[step.start : step.start + step.count]
        return _means(rows, cases, step, folder, decision_score(self.config))

    def _count_haystacks(self, folder: Path, step: Step) -> None:
        with RunStore.read(folder) as store:
            built = (store.meta().get("corpus") or {}).get("variants")
        if isinstance(built, int) and built < step.start + step.count:
            self.haystacks = built if self.haystacks is None else min(self.haystacks, built)

    def _spend(self, folder: Path, name: str) -> list[Row]:
        """Count a step's calls, prompt tokens and cost (finished or stopped by the budget)."""
        with RunStore.read(folder) as store:
            rows = store.rows()
            self.cost += store.spent()
        self.folders.append(name)
        self.calls += len({row["call_id"] for row in rows if row["status"] != "pending"})
        self.tokens += sum(row["usage_prompt_tokens"] or 0 for row in rows)
        return rows


def run_search_experiment(
    config: ExperimentConfig,
    run_dir: Path | None = None,
    *,
    reporter: Reporters = lambda: None,
    warn: Callable[[str], None] = lambda line: None,
) -> Path:
    """Start a search in a new folder (``config.out`` or a dated one); returns the folder. Its
    defaults are resolved first (``search_setup.prepare_search``) and ``warn`` told of what the
    search may not be able to decide."""
    prepared = prepare_search(config)
    config = prepared.config
    assert config.search is not None
    run_dir = run_dir or (Path(config.out) if config.out else default_run_dir(config))
    if (run_dir / CONFIG_FILE).exists():
        raise BadInput(f"{run_dir}: already holds a run; continue it with {resume_command(run_dir)}")
    measured_settings(config, settings_of(config))  # bad input first, the model's window too
    for line in prepared.warnings:
        warn(line)
    (run_dir / "steps").mkdir(parents=True, exist_ok=True)
    try:
        _write_config(run_dir, config)
        record = _search(config, run_dir, reporter)
    except KeyboardInterrupt:  # once the folder holds its config, before _search's own guard
        raise SearchInterrupted(run_dir, 0, 0, 0) from None
    _write_record(run_dir, record)
    return run_dir


def _write_record(run_dir: Path, record: SearchRecord) -> None:
    """``search.json``. A Ctrl-C while it is written may leave it cut short: the steps are kept,
    and a resume (which takes an unreadable record for none) writes it again."""
    try:
        # json.dumps of the dump, not pydantic's JSON: the file stays the text it was
        path = inside(run_dir, run_dir / SEARCH_FILE, what="search")  # never through a link out
        write_output(path, json.dumps(record.model_dump(), indent=2) + "\n", "search")
    except KeyboardInterrupt:
        raise SearchInterrupted(run_dir, 0, 0, len(record.steps)) from None


def resume_search(
    run_dir: Path,
    *,
    reporter: Reporters = lambda: None,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    max_cost: float | None = None,
) -> Path:
    """Continue a search folder; a budget given (a runtime field: calls, prompt tokens or USD over
    all steps) is written back to its config.

    A finished search (decided, or undecided at the cap) has nothing a resume can add: it is left
    as it is, its record unchanged, whatever budget is given. A budget lower than the search's (or
    one it had none of) is tried without being written; when it stops the search before what its
    record already decided, the record and the config are kept as they were."""
    config = load_config(run_dir / CONFIG_FILE, paths_from=Path.cwd())
    assert config.search is not None  # is_search_folder checked the folder
    stored = _stored_record(run_dir)
    if stored is not None and stored.verdict in FINISHED:
        _notice(
            reporter,
            f"the search had finished ({stored.verdict}); a resume adds nothing to it, so "
            f"{run_dir / SEARCH_FILE} is kept as it was",
        )
        return run_dir
    given = {"max_calls": max_calls, "max_tokens": max_tokens, "max_cost": max_cost}
    before = {
        **{key: getattr(config.search, key) for key in ("max_calls", "max_tokens")},
        "max_cost": config.max_cost,
    }
    changes = {key: value for key, value in given.items() if value is not None}
    lowered = any(before[key] is None or value < before[key] for key, value in changes.items())
    if changes:
        search = {
            **config.search.model_dump(mode="json"),
            **{k: v for k, v in changes.items() if k != "max_cost"},
        }
        data = {**config.model_dump(mode="json"), "search": search}
        if max_cost is not None:
            data["max_cost"] = max_cost
        config = build_config(data, str(run_dir / CONFIG_FILE))
        if not lowered:  # written first, so a resume stopped midway keeps the larger budget
            _write_config(run_dir, config)
    record = _search(config, run_dir, reporter)
    if stored is not None and _fewer(record, stored):
        _notice(
            reporter,
            f"the budget given stops the search before what it had decided ({len(stored.decisions)} "
            f"decisions); its record and budget are kept as they were",
        )
        return run_dir
    if changes and lowered:
        _write_config(run_dir, config)
    _write_record(run_dir, record)
    return run_dir


def measured_settings(config: ExperimentConfig, settings: SearchSettings) -> SearchSettings:
    """``settings`` checked and counted on the model itself, before the search's first call: every
    length it may measure fits the model's window (a step past it would stop the search there, and
    every resume with it), and an instance's calls are those a step really plans for it (session
    filler with ``filler.static`` renders each layout twice), so ``max_calls`` holds."""
    backend = create_backend(config)
    try:
        window, model = backend.context_window, backend.model_id
        longest = max(settings.lengths[-1], settings.base_length)
        max_tokens = search_reply_budget(config)
        if longest + max_tokens > window:
            raise BadInput(
                f"search.range: {longest} tokens plus max_tokens {max_tokens} exceed the context window of "
                f"{model} ({window} tokens); end the range at {window - max_tokens} tokens or less"
            )
        one = _step_config(config, Step(BASE, settings.base_length, 0, 1), None)
        planned = len(build_plan(one, backend).items)
    finally:
        backend.close()
    return replace(settings, calls_per_instance=max(settings.calls_per_instance, planned))


FINISHED = ("decided", "undecided")
"""Verdicts of a search that ended on its own (not stopped by a budget)."""


def _stored_record(run_dir: Path) -> SearchRecord | None:
    """The search's record as it was written; ``None`` when there is none to keep (or it is
    unreadable, or no search record: the resume writes it again)."""
    try:
        return SearchRecord.model_validate(json.loads((run_dir / SEARCH_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):  # a pydantic ValidationError is a ValueError
        return None


def _fewer(record: SearchRecord, stored: SearchRecord) -> bool:
    """Whether ``record`` holds fewer of the decisions ``stored`` holds (it stopped sooner)."""
    return len(record.decisions) < len(stored.decisions)


def _write_config(run_dir: Path, config: ExperimentConfig) -> None:
    path = inside(run_dir, run_dir / CONFIG_FILE, what="search")  # never through a link out
    write_output(path, yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), "search")


def _notice(reporter: Reporters, message: str) -> None:
    made = reporter()
    if made is not None:
        made.notice(message)


def _search(config: ExperimentConfig, run_dir: Path, reporter: Reporters) -> SearchRecord:
    """Run (or replay, from the steps' stores) the search; returns its record, not yet written."""
    assert config.search is not None
    steps: _Steps | None = None
    try:
        ids = case_ids(config, config.search.cap)
        resolved = measured_settings(config, search_settings(config, config.search, len(ids)))
        steps = _Steps(config, run_dir, ids, reporter)
        result = run_search(resolved, steps)
    except KeyboardInterrupt:  # before the first step, or between steps: the search's own work
        raise SearchInterrupted(run_dir, 0, 0, len(steps.folders) if steps else 0) from None
    assert steps is not None
    found = search_record(resolved, result, steps, config.max_cost)
    chosen = decision_score(config)
    # the key stays out of an accuracy search's record, as before
    return found if chosen == "accuracy" else found.model_copy(update={"score": chosen})


def search_record(
    settings: SearchSettings, result: SearchResult, steps: _Steps, max_cost: float | None
) -> SearchRecord:
    """What ``search.json`` holds (see the module docstring)."""
    decided = result.instances_at_decided()
    coarse = SearchSettings(
        lengths=tuple(log_grid(settings.lengths[0], settings.lengths[-1], settings.resolution)),
        resolution=settings.resolution,
        base_length=settings.base_length,
        threshold=settings.threshold,
        calls_per_instance=settings.calls_per_instance,
    )
    hindsight = max(decided, default=settings.cap)  # what a grid needs to decide what the search did
    final = result.final()
    low, high = result.bracket
    return SearchRecord(
        verdict=result.verdict,
        reason=result.reason,
        bracket=SearchBracket(passes=low, fails=high),
        effective_length=low,
        pass_decision=next((_decision(d) for d in final.values() if d.length == low), None),
        fail_decision=next((_decision(d) for d in final.values() if d.length == high), None),
        definition=SearchDefinition(relative=settings.threshold.relative, value=settings.threshold.value),
        confidence=settings.confidence,
        alpha_per_length=settings.alpha_per_length,
        resolution=settings.resolution,
        range=[settings.lengths[0], settings.lengths[-1]],
        base_length=settings.base_length,
        decisions=[_decision(d) for d in result.decisions],
        non_monotone=[list(pair) for pair in result.non_monotone],
        steps=steps.folders,
        calls=steps.calls,
        prompt_tokens=steps.tokens,
        budget=SearchBudget(max_calls=settings.max_calls, max_tokens=settings.max_tokens, max_cost=max_cost),
        stopped_by=list(result.stopped_by),
        cost=steps.cost,
        cap=settings.cap,
        shared_haystacks=steps.haystacks,
        fixed_grid=FixedGrid(
            lengths=len(coarse.lengths),
            instances_per_length=settings.cap,
            calls=fixed_grid_calls(coarse, settings.cap),
        ),
        fixed_grid_hindsight=FixedGrid(
            lengths=len(coarse.lengths),
            instances_per_length=hindsight,
            calls=fixed_grid_calls(coarse, hindsight),
        ),
        method=METHOD,
    )


def _decision(decision: Decision) -> SearchDecision:
    return SearchDecision(**asdict(decision))
