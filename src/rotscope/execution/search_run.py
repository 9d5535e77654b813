"""``rotscope run CONFIG --search``: the adaptive effective-length search (``plan.search``) run
through the ordinary runner. Each step (a length and a window of instances) is a run folder of its
own under ``DIR/steps``, with the run store, lock, resume and error rows of any run; the search's
decisions are taken again from those stored results on ``--resume``, so a resumed search (with a
larger budget, or after a Ctrl-C) takes the decisions an uninterrupted one takes.

``DIR/search.json`` holds the outcome: the decisions in order, the bracket and verdict, the calls
and tokens spent, what the fixed grid of the same resolution would have cost, and the method.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import yaml

from rotscope.backends import create_backend
from rotscope.config import ExperimentConfig, SearchConfig, build_config, load_config
from rotscope.errors import BadInput, write_output
from rotscope.execution.run_folder import CONFIG_FILE, STORE_FILE, default_run_dir
from rotscope.execution.runner import (
    BudgetReached,
    EngineStopped,
    Interrupted,
    Reporter,
    resume_experiment,
    run_experiment,
)
from rotscope.execution.self_session import self_written
from rotscope.plan import select_cases
from rotscope.plan.search import (
    BASE,
    BudgetSpent,
    SearchResult,
    SearchSettings,
    Step,
    Threshold,
    fixed_grid_calls,
    log_grid,
    run_search,
)
from rotscope.plan.workitems import build_plan
from rotscope.rows import Row
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


def _settings(config: ExperimentConfig, search: SearchConfig, cap: int) -> SearchSettings:
    if len(config.tasks) != 1:
        raise BadInput(f"search: searches one task family at a time, got tasks {config.tasks}")
    if self_written(config):
        raise BadInput(
            "search: filler.assistant: model would write a new session in every step; "
            "search on generated or transcript session filler"
        )
    lo, hi = search.range
    base = search.base_length if search.base_length is not None else min(config.lengths)
    per_instance = (
        len(config.parsed_positions()) * config.trials * (1 + config.controls + config.evidence_only)
    )
    return SearchSettings(
        lengths=tuple(log_grid(lo, hi, search.resolution, 2)),
        resolution=search.resolution,
        base_length=base,
        threshold=Threshold.parse(search.definition),
        confidence=search.confidence,
        batch=search.batch,
        cap=cap,
        calls_per_instance=per_instance,
        max_calls=search.max_calls,
        max_tokens=search.max_tokens,
    )


def _step_config(config: ExperimentConfig, step: Step, max_cost: float | None) -> ExperimentConfig:
    data = config.model_dump(mode="json")
    data.update(lengths=[step.length], case_offset=step.start, limit=step.count, search=None, out=None)
    data["max_cost"] = max_cost
    return build_config(data, "search step")


def _check_cases(config: ExperimentConfig, cap: int | None) -> list[str]:
    """The ids of the first ``cap`` cases (within the experiment's ``limit``; every one when
    ``cap`` is ``None``), or bad input when the task has fewer."""
    data = config.model_dump(mode="json")
    data.update(case_offset=0, search=None, controls=False, evidence_only=False)
    cases = [case for case in select_cases(build_config(data, "search")) if not case.control]
    if cap is None:
        return [case.case_id for case in cases]
    if len(cases) < cap:
        raise BadInput(
            f"search.cap: {cap} instances per length, but task {config.tasks[0]} has {len(cases)} cases"
        )
    return [case.case_id for case in cases[:cap]]


def _finished(run_dir: Path) -> bool:
    with RunStore.read(run_dir) as store:
        return all(row["status"] == "ok" for row in store.rows())


def _means(rows: list[Row], case_ids: list[str]) -> list[float]:
    """Each case's mean correctness over its scored (non-control) rows, in case order (the step's
    rows are all answered: a step with error rows never reaches the search)."""
    outcomes: dict[str, list[int]] = {case_id: [] for case_id in case_ids}
    for row in rows:
        if not row["control"] and row["status"] == "ok" and row["case_id"] in outcomes:
            outcomes[row["case_id"]].append(int(row["outcome"] == "correct"))
    return [sum(v) / len(v) if v else 0.0 for v in outcomes.values()]


class _Steps:
    """Runs (or resumes, or reads) each step's run folder and keeps what it spent."""

    def __init__(self, config: ExperimentConfig, run_dir: Path, case_ids: list[str], reporter: Reporters):
        self.config, self.run_dir, self.case_ids, self.reporter = config, run_dir, case_ids, reporter
        self.count = 0
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self.folders: list[str] = []

    def _remaining(self) -> float | None:
        """What is left of the search's USD budget (``max_cost``) for the next step."""
        return None if self.config.max_cost is None else self.config.max_cost - self.cost

    def __call__(self, step: Step) -> list[float]:
        self.count += 1
        name = f"{self.count:02d}-L{step.length}-i{step.start}-{step.start + step.count}"
        folder = self.run_dir / "steps" / name
        remaining = self._remaining()
        try:
            if not (folder / STORE_FILE).is_file():
                if remaining is not None and remaining <= 0:
                    raise BudgetSpent(name)
                config = _step_config(self.config, step, remaining)
                run_experiment(config, run_dir=folder, reporter=self.reporter(), allow_empty=True)
            elif not _finished(folder):
                if remaining is not None and remaining <= 0:
                    raise BudgetSpent(name)
                resume_experiment(folder, reporter=self.reporter(), max_cost=remaining)
        except Interrupted as stop:
            raise Interrupted(self.run_dir, stop.done, stop.total) from None
        except BudgetReached:
            self._spend(folder, name)
            raise BudgetSpent(name) from None
        rows = self._spend(folder, name)
        failed = sum(row["status"] != "ok" for row in rows)
        if failed:  # an error is never a wrong answer: the search waits for --resume to retry them
            done = len(rows) - failed
            reason = f"step {name} has {failed} error rows (model or engine failures), retried on --resume"
            raise EngineStopped(self.run_dir, done, len(rows), reason)
        return _means(rows, self.case_ids[step.start : step.start + step.count])

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
    config: ExperimentConfig, run_dir: Path | None = None, *, reporter: Reporters = lambda: None
) -> Path:
    """Start a search in a new folder (``config.out`` or a dated one); returns the folder."""
    if config.search is None:
        raise BadInput("--search needs a search: section in the experiment file (range: [MIN, MAX] at least)")
    run_dir = run_dir or (Path(config.out) if config.out else default_run_dir(config))
    if (run_dir / CONFIG_FILE).exists():
        raise BadInput(f"{run_dir}: already holds a run; continue it with rotscope run --resume {run_dir}")
    cases = len(_check_cases(config, config.search.cap))
    measured_settings(config, _settings(config, config.search, cases))  # bad input first
    (run_dir / "steps").mkdir(parents=True, exist_ok=True)
    write_output(
        run_dir / CONFIG_FILE, yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), "search"
    )
    return _search(config, run_dir, reporter)


def resume_search(
    run_dir: Path,
    *,
    reporter: Reporters = lambda: None,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    max_cost: float | None = None,
) -> Path:
    """Continue a search folder; a larger budget (a runtime field: calls, prompt tokens or USD over
    all steps) is written back to its config."""
    config = load_config(run_dir / CONFIG_FILE, paths_from=Path.cwd())
    assert config.search is not None  # is_search_folder checked the folder
    changes = {key: value for key, value in (("max_calls", max_calls), ("max_tokens", max_tokens)) if value}
    if max_cost is not None and config.max_cost is not None and max_cost < config.max_cost:
        raise BadInput(f"--max-cost {max_cost}: smaller than the search's budget ${config.max_cost}")
    if changes or max_cost is not None:
        search = {**config.search.model_dump(mode="json"), **changes}
        data = {**config.model_dump(mode="json"), "search": search}
        if max_cost is not None:
            data["max_cost"] = max_cost
        config = build_config(data, str(run_dir / CONFIG_FILE))
        write_output(
            run_dir / CONFIG_FILE, yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), "search"
        )
    return _search(config, run_dir, reporter)


def measured_settings(config: ExperimentConfig, settings: SearchSettings) -> SearchSettings:
    """``settings`` checked and counted on the model itself, before the search's first call: every
    length it may measure fits the model's window (a step past it would stop the search there, and
    every resume with it), and an instance's calls are those a step really plans for it (session
    filler with ``filler.static`` renders each layout twice), so ``max_calls`` holds."""
    backend = create_backend(config)
    try:
        window, model = backend.context_window, backend.model_id
        longest = max(settings.lengths[-1], settings.base_length)
        max_tokens = config.generation.max_tokens
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


def _search(config: ExperimentConfig, run_dir: Path, reporter: Reporters) -> Path:
    assert config.search is not None
    case_ids = _check_cases(config, config.search.cap)
    settings = measured_settings(config, _settings(config, config.search, len(case_ids)))
    steps = _Steps(config, run_dir, case_ids, reporter)
    result = run_search(settings, steps)
    record = search_record(settings, result, steps, config.max_cost)
    write_output(run_dir / SEARCH_FILE, json.dumps(record, indent=2) + "\n", "search")
    return run_dir


def search_record(
    settings: SearchSettings, result: SearchResult, steps: _Steps, max_cost: float | None
) -> dict[str, Any]:
    """What ``search.json`` holds (see the module docstring)."""
    decided = result.instances_at_decided()
    per_length = max(decided, default=settings.cap)  # what a grid needs to decide what the search did
    coarse = SearchSettings(
        lengths=tuple(log_grid(settings.lengths[0], settings.lengths[-1], settings.resolution)),
        resolution=settings.resolution,
        base_length=settings.base_length,
        threshold=settings.threshold,
        calls_per_instance=settings.calls_per_instance,
    )
    final = result.final()
    low, high = result.bracket
    return {
        "verdict": result.verdict,
        "reason": result.reason,
        "bracket": {"passes": low, "fails": high},
        "effective_length": low,
        "pass_decision": next((asdict(d) for d in final.values() if d.length == low), None),
        "fail_decision": next((asdict(d) for d in final.values() if d.length == high), None),
        "definition": {"relative": settings.threshold.relative, "value": settings.threshold.value},
        "confidence": settings.confidence,
        "alpha_per_length": settings.alpha_per_length,
        "resolution": settings.resolution,
        "range": [settings.lengths[0], settings.lengths[-1]],
        "base_length": settings.base_length,
        "decisions": [asdict(d) for d in result.decisions],
        "non_monotone": [list(pair) for pair in result.non_monotone],
        "steps": steps.folders,
        "calls": steps.calls,
        "prompt_tokens": steps.tokens,
        "budget": {"max_calls": settings.max_calls, "max_tokens": settings.max_tokens, "max_cost": max_cost},
        "stopped_by": list(result.stopped_by),
        "cost": steps.cost,
        "fixed_grid": {
            "lengths": len(coarse.lengths),
            "instances_per_length": per_length,
            "calls": fixed_grid_calls(coarse, per_length),
        },
        "method": METHOD,
    }
