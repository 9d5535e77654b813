"""Which workflow a ``rotscope run`` calls: from its options (plain, --resume of a run, a paired
session or a search, --pair, --search, --dry-run), with the refusals of options that do not go
together; and the record a finished search leaves in its folder (``search.json``). The experiment
itself is built from the options by ``rotscope.config.builder``.

The command line parses its arguments into ``RunOptions`` and prints the ``Outcome``; this module
decides and calls, and reports bad input as ``BadInput``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rotscope._util.resume_hint import resume_command
from rotscope.config.builder import experiment_for_run, with_search_budget
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.execution.calls.execute import Reporter
from rotscope.execution.workflows.dry_run import DryRun
from rotscope.search.record import SearchRecord
from rotscope.search.setup import SearchDryRun

SEARCH_RECORD = "search.json"


def _first_problem(error: ValidationError) -> str:
    """The first problem of ``error`` as ``key 'a.b': what it should be``."""
    problem = error.errors()[0]
    key = ".".join(str(part) for part in problem["loc"]) or "(top)"
    if problem["type"] == "missing":
        return f"key {key!r} is missing"
    said = re.sub(r" or instance of \w+", "", str(problem["msg"]).removeprefix("Input "))
    return f"key {key!r} {said[0].lower()}{said[1:]}, got {problem['input']!r:.40}"


def read_search_record(run_dir: Path) -> SearchRecord:
    """``DIR/search.json``; ``BadInput`` when it is not the record a search writes: not JSON, not a
    mapping, or a key its readers use missing or of the wrong type (``search.record.SearchRecord``:
    a record that fails it is bad input naming the key, not a ``KeyError`` or ``TypeError`` inside
    a view)."""
    path = run_dir / SEARCH_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise BadInput(f"{path}: not a readable search record ({error})") from None
    if not isinstance(record, dict) or not {"verdict", "bracket", "decisions"} <= record.keys():
        raise BadInput(f"{path}: not a search record (no verdict, bracket and decisions)")
    try:
        return SearchRecord.model_validate(record)
    except ValidationError as error:
        raise BadInput(
            f"{path}: not a valid search record: {_first_problem(error)}; remove it and run "
            f"{resume_command(run_dir)}, which rebuilds it from the search's steps"
        ) from None


def refuse_unfinished_search(run_dir: Path) -> None:
    """``BadInput`` for a search folder without its record (a search stopped before its end)."""
    if not (run_dir / SEARCH_RECORD).is_file():
        raise BadInput(
            f"{run_dir}: a search that has not finished; continue it with {resume_command(run_dir)}"
        )


def budget_stop(record: SearchRecord, run_dir: Path) -> str | None:
    """The one line of a search stopped by its budget (``None`` when it decided): what it spent
    and the command that goes on."""
    if record.verdict != "inconclusive":
        return None
    budget = record.budget
    # A record written before ``stopped_by`` existed names no budget: suggest every one set.
    every_set = [
        key
        for key, value in (
            ("max_calls", budget.max_calls),
            ("max_tokens", budget.max_tokens),
            ("max_cost", budget.max_cost),
        )
        if value
    ]
    keys = record.stopped_by or every_set
    larger = " ".join(f"--{key.replace('_', '-')} LARGER" for key in keys)
    return (
        f"stopped at budget: {record.calls} calls, {record.prompt_tokens:,} prompt tokens, "
        f"${record.cost:.4f} spent; continue with: {resume_command(run_dir, larger)}"
    )


@dataclass(frozen=True)
class RunOptions:
    """``rotscope run``'s options, parsed; ``overrides`` gives the config fields of the command
    line (called only where a new experiment is built, so a resume never parses them)."""

    config: Path | None = None
    overrides: Callable[[], dict[str, Any]] = dict
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    model: str | None = None
    out: Path | None = None
    resume: Path | None = None
    dry_run: bool = False
    max_cost: float | None = None
    no_cache: bool = False
    base_url: str | None = None
    api_key_env: str | None = None
    plan_file: Path | None = None
    allow_deviation: bool = False
    pair: str | None = None
    models: str | None = None
    subjects_file: Path | None = None
    search: bool = False
    max_calls: int | None = None
    max_tokens: int | None = None
    executor: str | None = None


@dataclass(frozen=True)
class RunFinished:
    run_dir: Path


@dataclass(frozen=True)
class PairFinished:
    out: Path


@dataclass(frozen=True)
class SearchFinished:
    folder: Path


@dataclass(frozen=True)
class Planned:
    dry_run: DryRun


@dataclass(frozen=True)
class SearchPlanned:
    dry_run: SearchDryRun


@dataclass(frozen=True)
class PairPlanned:
    """A paired session's dry run: each subject's, by role (``pair.SUBJECTS``)."""

    dry_runs: dict[str, DryRun]


@dataclass(frozen=True)
class ModelsFinished:
    """A --models session's folder (``models_session``)."""

    out: Path


@dataclass(frozen=True)
class ModelsPlanned:
    """A --models session's dry run: each subject's, by folder name."""

    dry_runs: dict[str, DryRun]


Outcome = (
    ModelsFinished
    | ModelsPlanned
    | RunFinished
    | PairFinished
    | SearchFinished
    | Planned
    | SearchPlanned
    | PairPlanned
)


def run_from_options(
    options: RunOptions,
    progress: Callable[[], Reporter | None] = lambda: None,
    warn: Callable[[str], None] = lambda line: None,
) -> Outcome:
    """Decide the workflow from ``options`` and run it; ``progress`` makes a reporter for each
    session, ``warn`` is told of what a search resolved for itself."""
    from rotscope.search.run import is_search_folder, resume_search

    resume = options.resume
    if resume is not None and is_search_folder(resume):
        if _names_a_config(options):
            raise BadInput("--resume takes the run folder alone; its config.yaml is used")
        if options.dry_run or options.pair is not None or options.executor is not None:
            raise BadInput(
                "--resume of a search continues it and takes neither --dry-run, --pair nor --executor; "
                f"rotscope show {resume} prints what it has done"
            )
        folder = resume_search(
            resume,
            reporter=progress,
            max_calls=options.max_calls,
            max_tokens=options.max_tokens,
            max_cost=options.max_cost,
        )
        return SearchFinished(folder)
    if (options.max_calls or options.max_tokens) and not options.search:
        raise BadInput(
            "--max-calls and --max-tokens budget a search: run CONFIG --search, or --resume a search"
        )
    if resume is not None:
        return _resume(resume, options, progress)
    return _new(options, progress, warn)


def _names_a_config(options: RunOptions, *, moving_replicas: bool = False) -> bool:
    """Options that name another experiment; ``moving_replicas``: ``--base-url`` is allowed (a
    ``serve/NAME`` run's replicas may move, ``runner.resumed_config`` checks the model)."""
    return (
        options.config is not None
        or options.plan_file is not None
        or (options.base_url is not None and not moving_replicas)
        or options.api_key_env is not None
    )


def _resume(resume: Path, options: RunOptions, progress: Callable[[], Reporter | None]) -> Outcome:
    from rotscope.execution.workflows.runner import resume_experiment

    if _names_a_config(options, moving_replicas=True):
        raise BadInput("--resume takes the run folder alone; its config.yaml is used")
    if options.subjects_file is not None:
        raise BadInput("--resume takes the run folder alone; its subjects are in its config.yaml")
    if options.executor is not None:
        raise BadInput("--resume runs on the executor in the folder's config.yaml; drop --executor")
    if options.pair is not None:
        raise BadInput("--resume takes the run folder alone; a paired session's folder resumes both")
    use_cache = not options.no_cache
    if options.models is not None:
        raise BadInput("--resume takes the session folder alone; a --models session resumes all its subjects")
    from rotscope.modes.models_session import resume_models, session_kind

    kind = session_kind(resume)  # either form of a session, by its record (``session_record``)
    if kind is not None:
        if options.base_url is not None:
            raise BadInput(
                "--resume --base-url moves the replicas of one serve/NAME run folder; a session's "
                "subjects keep the servers in their config.yaml"
            )
        resume_models(resume, reporter=progress(), max_cost=options.max_cost, use_cache=use_cache)
        return PairFinished(resume) if kind == "pair" else ModelsFinished(resume)
    return RunFinished(
        resume_experiment(
            resume,
            reporter=progress(),
            max_cost=options.max_cost,
            use_cache=use_cache,
            base_url=options.base_url,
        )
    )


def _new(
    options: RunOptions, progress: Callable[[], Reporter | None], warn: Callable[[str], None]
) -> Outcome:
    from rotscope.execution.workflows.dry_run import dry_run
    from rotscope.execution.workflows.runner import run_experiment
    from rotscope.modes.pair import pair_dry_run, parse_pair, run_pair
    from rotscope.plan.manifest import read_manifest, with_frozen_defaults

    experiment = experiment_for_run(
        options.config, options.overrides(), options.sections, options.subjects_file
    )
    if options.search:
        return _search(experiment, options, progress, warn)
    frozen = read_manifest(options.plan_file) if options.plan_file is not None else None
    experiment = with_frozen_defaults(experiment, frozen)  # an old plan keeps its filler.variants
    if options.models is not None:
        return _models(experiment, options, progress, frozen)
    if options.pair is not None:
        if options.model is not None:
            raise BadInput("--pair takes no --model: BASELINE,CANDIDATE name both subjects")
        if options.dry_run:
            return PairPlanned(
                pair_dry_run(
                    experiment,
                    parse_pair(options.pair),
                    frozen_plan=frozen,
                    allow_deviation=options.allow_deviation,
                )
            )
        if options.out is None:
            raise BadInput("--pair needs --out DIR (it writes DIR/baseline and DIR/candidate)")
        run_pair(
            experiment,
            parse_pair(options.pair),
            options.out,
            reporter=progress(),
            frozen_plan=frozen,
            allow_deviation=options.allow_deviation,
        )
        return PairFinished(options.out)
    if options.dry_run:
        return Planned(dry_run(experiment, frozen, options.allow_deviation))
    return RunFinished(
        run_experiment(
            experiment, reporter=progress(), frozen_plan=frozen, allow_deviation=options.allow_deviation
        )
    )


def _search(
    experiment: ExperimentConfig,
    options: RunOptions,
    progress: Callable[[], Reporter | None],
    warn: Callable[[str], None],
) -> Outcome:
    from rotscope.search.run import run_search_experiment
    from rotscope.search.setup import search_dry_run

    if (
        options.pair is not None
        or options.models is not None
        or options.plan_file is not None
        or options.allow_deviation
    ):
        raise BadInput(
            "--search takes neither --pair nor --plan: a search plans each step from the "
            "last one's results (run --search once per model; --dry-run shows its worst case)"
        )
    experiment = with_search_budget(experiment, options.max_calls, options.max_tokens, str(options.config))
    if options.dry_run:
        return SearchPlanned(search_dry_run(experiment))
    return SearchFinished(run_search_experiment(experiment, reporter=progress, warn=warn))


def _models(
    experiment: ExperimentConfig,
    options: RunOptions,
    progress: Callable[[], Reporter | None],
    frozen: Mapping[str, Any] | None,
) -> Outcome:
    """``--models A,B,C``: N subjects in one interleaved session (``models_session``)."""
    from rotscope.modes.models_session import models_dry_run, parse_models, run_models

    if options.pair is not None or options.model is not None:
        raise BadInput("--models takes neither --pair nor --model: A,B,C name every subject")
    if frozen is not None or options.allow_deviation:
        raise BadInput("--models takes no --plan: use --pair BASELINE,CANDIDATE against a frozen plan")
    subjects = parse_models(options.models or "")
    if options.dry_run:
        return ModelsPlanned(models_dry_run(experiment, subjects))
    if options.out is None:
        raise BadInput("--models needs --out DIR (it writes a run folder per subject into DIR)")
    run_models(experiment, subjects, options.out, reporter=progress())
    return ModelsFinished(options.out)
