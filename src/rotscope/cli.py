"""The command line: each command parses, builds one config object and calls the library."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from rotscope._util.jsonl import jsonl_line
from rotscope._util.safe_text import terminal_safe
from rotscope.config import ExperimentConfig, build_config, read_config_file, resolve_paths
from rotscope.errors import BadInput, SessionStopped, write_failure, write_output

if TYPE_CHECKING:
    pass

EXIT_BROKEN_PIPE = 141
"""stdout was closed before everything was written (``rotscope export DIR | head -1``): the
command ends at once and quietly with the status a shell gives a process killed by SIGPIPE
(128 + 13), as ``cat`` or ``seq`` would; a script under ``set -o pipefail`` sees the output cut."""


def _quiet_closed_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's captured stdout)
        pass


class _Commands(TyperGroup):
    """Every command: a closed stdout pipe ends it quietly with ``EXIT_BROKEN_PIPE``."""

    def invoke(self, ctx: Any) -> Any:  # a click context (typer vendors click)
        try:
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # what is still buffered meets the closed pipe here, not at exit
        except BrokenPipeError:
            _quiet_closed_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals could hold secrets
    help="Measure where a model stops using its context.",
)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """rich would exit 1; a closed pipe ends the command as ``_Commands`` says."""
        self.quiet = True
        raise BrokenPipeError


console = _Console()
errors = _Console(stderr=True)
T = TypeVar("T")

EXIT_BAD_INPUT = 2
EXIT_BUDGET = 4
"""A run stopped by --max-cost: not done (so not 0, which scripts would take as complete), not
bad input (2), not a Ctrl-C (130); finished work is kept and --resume with a larger budget goes on."""
EXIT_ENGINE_CRASHED = 5
"""The local engine crashed repeatedly (its worker restarted each time); finished work is kept."""
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
"""SIGTERM (128 + 15): handled as Ctrl-C is (finished work kept, every command rotscope started
ended, its temporary folders removed), and reported with the status a shell expects of it."""
_terminated = False


def _terminate_as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM takes the path of Ctrl-C: the SIGINT handler in force (asyncio's, which cancels the
    calls in flight so that each one ends its command, or Python's ``KeyboardInterrupt``)."""
    global _terminated
    _terminated = True
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job of a script): SIGTERM still stops the run
        raise KeyboardInterrupt


def _interrupted_code() -> int:
    return EXIT_TERMINATED if _terminated else EXIT_INTERRUPTED


def _warn(message: str) -> None:
    """A warning on stderr, ``rotscope: warning: ...``; the command goes on."""
    errors.print(
        f"rotscope: warning: {terminal_safe(message)}", markup=False, highlight=False, soft_wrap=True
    )


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    # A server's error text is part of some messages: its control characters are shown escaped.
    errors.print(f"rotscope: {terminal_safe(message)}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _guarded(action: Callable[[], T]) -> T:
    """Run a command body; bad input becomes one line on stderr and exit 2, Ctrl-C exit 130; so does
    a write the disk or file system refused (disk full, read-only, no permission)."""
    from rotscope.execution.workflows.runner import BudgetReached, EngineStopped, Interrupted

    try:
        return action()
    except BadInput as error:
        _fail(str(error))
    except sqlite3.DatabaseError as error:
        # A store of a newer schema is refused by name when it is opened (BadInput above); what
        # reaches here is a write the disk refused or a file that is not a run store.
        reason = write_failure(error)
        _fail(f"run store: {reason} ({error})" if reason else f"run store unreadable ({error})")
    except OSError as error:
        reason = write_failure(error)
        if reason is None:
            raise
        _fail(f"cannot write {error.filename or 'an output'} ({reason})")
    except Interrupted as stop:
        _fail(
            f"interrupted: {stop.done} of {stop.total} items done and kept in {stop.run_dir}; "
            f"continue with: rotscope run --resume {stop.run_dir}",
            _interrupted_code(),
        )
    except BudgetReached as stop:
        _fail(
            f"stopped at budget: ${stop.spent:.4f} spent of --max-cost ${stop.max_cost:.4f}, the next call "
            f"could exceed it; {stop.done} of {stop.total} items done and kept in {stop.run_dir}; "
            f"continue with: rotscope run --resume {stop.run_dir} --max-cost LARGER",
            EXIT_BUDGET,
        )
    except EngineStopped as stop:
        _fail(
            f"stopped: {stop.reason}; {stop.done} of {stop.total} items done and kept in {stop.run_dir}; "
            f"check the machine with rotscope doctor, then: rotscope run --resume {stop.run_dir}",
            EXIT_ENGINE_CRASHED,
        )
    except SessionStopped as stop:
        _fail(str(stop), EXIT_BUDGET if stop.budget else _interrupted_code())
    except KeyboardInterrupt:
        _fail("interrupted", _interrupted_code())


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _numbers(value: str | None, kind: type, field: str) -> list[Any] | None:
    parts = _split(value)
    if parts is None:
        return None
    parsed: list[Any] = []
    for part in parts:
        try:
            parsed.append(kind(part))
        except ValueError:
            if field == "depths":
                parsed.append(part)
            else:
                raise BadInput(f"--{field}: {part!r} is not a number") from None
    return parsed


def _build(
    config_path: Path | None, overrides: dict[str, Any], sections: dict[str, dict[str, Any]] | None = None
) -> ExperimentConfig:
    """The experiment: the file (or the quick experiment) with the command line's fields, and its
    options of a section (``remote``, ``executor``) merged into the file's section."""
    from rotscope.config import quick_config_data

    data = read_config_file(config_path) if config_path else quick_config_data()
    given = {key: value for key, value in overrides.items() if value is not None}
    data.update(resolve_paths(given, Path.cwd()))  # a path on the command line is relative to here
    for name, options in (sections or {}).items():
        options = {key: value for key, value in options.items() if value is not None}
        if not options:
            continue
        section = data.get(name) or {}
        if not isinstance(section, dict):
            raise BadInput(f"{config_path}: field {name!r} must be a mapping")
        data[name] = {**section, **options}
    return build_config(data, str(config_path) if config_path else "quick experiment")


@app.command()
def run(
    config: Annotated[
        Path | None, typer.Argument(help="Experiment YAML; none runs the quick experiment.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="GGUF path or provider/name.")] = None,
    task: Annotated[str | None, typer.Option(help="Task families, comma separated.")] = None,
    lengths: Annotated[str | None, typer.Option(help="Prompt lengths in model tokens, e.g. 256,512.")] = None,
    depths: Annotated[str | None, typer.Option(help="Fractions in [0,1] or named positions.")] = None,
    trials: Annotated[int | None, typer.Option()] = None,
    limit: Annotated[int | None, typer.Option(help="Keep the first N cases of each task.")] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    out: Annotated[Path | None, typer.Option(help="Run folder.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue this run folder.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and verify; print calls, tokens and cost; call no model.")
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(help="USD budget of the run folder; stops (exit 4) before a call could exceed it."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")
    ] = False,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Server of an openai/NAME model (any compatible API).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = None,
    plan_file: Annotated[
        Path | None, typer.Option("--plan", help="Frozen plan (rotscope plan); a deviating run exits 2.")
    ] = None,
    allow_deviation: Annotated[
        bool, typer.Option("--allow-deviation", help="Run despite deviations from --plan, recording each.")
    ] = False,
    pair: Annotated[
        str | None,
        typer.Option(
            "--pair",
            help="BASELINE,CANDIDATE (subject names from the config's subjects:, or models): both in one "
            "interleaved session, into OUT/baseline and OUT/candidate.",
        ),
    ] = None,
    subjects_file: Annotated[
        Path | None,
        typer.Option(
            "--subjects", help="YAML file of subjects: (name, model, overrides), added to the config's."
        ),
    ] = None,
    search: Annotated[
        bool, typer.Option("--search", help="Search for the effective length (the config's search: section).")
    ] = False,
    max_calls: Annotated[
        int | None, typer.Option("--max-calls", help="Call budget of a search (--resume with more goes on).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Prompt-token budget of a search.")
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option("--executor", help="auto, inprocess or ray (workers: the config's executor section)."),
    ] = None,
) -> None:
    """Run an experiment (or continue one with --resume) and show its heatmap."""
    from rotscope.analysis.summary import load_summary
    from rotscope.execution.workflows.dry_run import dry_run as plan_only
    from rotscope.execution.workflows.pair import is_pair, parse_pair, resume_pair, run_pair
    from rotscope.execution.workflows.runner import resume_experiment, run_experiment
    from rotscope.plan.manifest import read_manifest
    from rotscope.report.dry_run import print_dry_run
    from rotscope.report.progress import ProgressBar
    from rotscope.report.terminal import print_summary
    from rotscope.subjects import read_subjects_file, with_subjects

    def body() -> None:
        from rotscope.execution.workflows.search_run import (
            is_search_folder,
            resume_search,
            run_search_experiment,
        )

        if resume is not None and is_search_folder(resume):
            if config is not None or plan_file is not None or base_url is not None or api_key_env is not None:
                raise BadInput("--resume takes the run folder alone; its config.yaml is used")
            if dry_run or pair is not None or executor is not None:
                raise BadInput(
                    "--resume of a search continues it and takes neither --dry-run, --pair nor --executor; "
                    f"rotscope show {resume} prints what it has done"
                )
            _print_search(resume_search(resume, reporter=lambda: ProgressBar(console), max_calls=max_calls,
                                        max_tokens=max_tokens, max_cost=max_cost))  # fmt: skip
            return
        if (max_calls or max_tokens) and not search:
            raise BadInput(
                "--max-calls and --max-tokens budget a search: run CONFIG --search, or --resume a search"
            )
        if resume is not None:
            if config is not None or plan_file is not None or base_url is not None or api_key_env is not None:
                raise BadInput("--resume takes the run folder alone; its config.yaml is used")
            if subjects_file is not None:
                raise BadInput("--resume takes the run folder alone; its subjects are in its config.yaml")
            if executor is not None:
                raise BadInput("--resume runs on the executor in the folder's config.yaml; drop --executor")
            if pair is not None:
                raise BadInput("--resume takes the run folder alone; a paired session's folder resumes both")
            if is_pair(resume):
                resume_pair(resume, reporter=ProgressBar(console), max_cost=max_cost, use_cache=not no_cache)
                _show_pair(resume)
                return
            run_dir = resume_experiment(
                resume, reporter=ProgressBar(console), max_cost=max_cost, use_cache=not no_cache
            )
        else:
            overrides = {
                "model": model,
                "tasks": _split(task),
                "lengths": _numbers(lengths, int, "lengths"),
                "depths": _numbers(depths, float, "depths"),
                "trials": trials,
                "limit": limit,
                "seed": seed,
                "out": str(out) if out else None,
                "max_cost": max_cost,
                "cache": {"enabled": False} if no_cache else None,
            }
            sections = {
                "remote": {"base_url": base_url, "api_key_env": api_key_env},
                "executor": {"kind": executor},
            }
            experiment = _build(config, overrides, sections)
            if subjects_file is not None:
                experiment = with_subjects(experiment, read_subjects_file(subjects_file), str(subjects_file))
            if search:
                if pair is not None or plan_file is not None or allow_deviation:
                    raise BadInput(
                        "--search takes neither --pair nor --plan: a search plans each step from the "
                        "last one's results (run --search once per model; --dry-run shows its worst case)"
                    )
                if experiment.search is not None and (max_calls or max_tokens):
                    budget = {"max_calls": max_calls, "max_tokens": max_tokens}
                    changed = {**experiment.search.model_dump(), **{k: v for k, v in budget.items() if v}}
                    experiment = build_config(  # unset fields stay unset: the search resolves them
                        {**experiment.model_dump(mode="json", exclude_unset=True), "search": changed},
                        str(config),
                    )
                if dry_run:
                    from rotscope.execution.workflows.search_setup import search_dry_run
                    from rotscope.report.search import print_search_dry_run

                    print_search_dry_run(search_dry_run(experiment), console, _warn)
                    return
                folder = run_search_experiment(experiment, reporter=lambda: ProgressBar(console), warn=_warn)
                _print_search(folder)
                return
            frozen = read_manifest(plan_file) if plan_file is not None else None
            if pair is not None:
                if model is not None or dry_run or out is None:
                    raise BadInput("--pair needs --out DIR and takes neither --model nor --dry-run")
                run_pair(
                    experiment,
                    parse_pair(pair),
                    out,
                    reporter=ProgressBar(console),
                    frozen_plan=frozen,
                    allow_deviation=allow_deviation,
                )
                _show_pair(out)
                return
            if dry_run:
                print_dry_run(plan_only(experiment, frozen, allow_deviation), console)
                return
            run_dir = run_experiment(
                experiment, reporter=ProgressBar(console), frozen_plan=frozen, allow_deviation=allow_deviation
            )
        console.print(f"run folder: {terminal_safe(str(run_dir))}", markup=False)
        print_summary(load_summary(run_dir), console)  # it ends with the run's one sentence

    _guarded(body)


def _show_pair(out: Path) -> None:
    """Each subject's heatmap, then where the two run folders are."""
    from rotscope.analysis.summary import load_summary
    from rotscope.execution.workflows.pair import SUBJECTS
    from rotscope.report.terminal import print_summary

    for role in SUBJECTS:
        console.print(f"{role}:", markup=False)
        print_summary(load_summary(out / role), console)
    folders = ", ".join(terminal_safe(str(out / role)) for role in SUBJECTS)
    console.print(f"paired run folders: {folders}; judge them with rotscope gate", markup=False)


def _refuse_unfinished_search(run_dir: Path) -> None:
    if not (run_dir / "search.json").is_file():
        _fail(f"{run_dir}: a search that has not finished; continue it with rotscope run --resume {run_dir}")


def _search_record(run_dir: Path) -> dict[str, Any]:
    """``DIR/search.json``; one line and exit 2 when it is not the record a search writes."""
    path = run_dir / "search.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        _fail(f"{path}: not a readable search record ({error})")
    if not isinstance(record, dict) or not {"verdict", "bracket", "decisions"} <= record.keys():
        _fail(f"{path}: not a search record (no verdict, bracket and decisions)")
    return record


def _print_search(run_dir: Path) -> None:
    """The search's result lines; a budget stop exits 4 like --max-cost, the results kept."""
    from rotscope.report.search import search_lines

    record = _search_record(run_dir)
    for line in search_lines(record):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"search folder: {terminal_safe(str(run_dir))}", markup=False)
    if record["verdict"] == "inconclusive":
        budget = record["budget"]
        # A record written before ``stopped_by`` existed names no budget: suggest every one set.
        every_set = [key for key in ("max_calls", "max_tokens", "max_cost") if budget.get(key)]
        keys = record.get("stopped_by") or every_set
        larger = " ".join(f"--{key.replace('_', '-')} LARGER" for key in keys)
        _fail(
            f"stopped at budget: {record['calls']} calls, {record['prompt_tokens']:,} prompt tokens, "
            f"${record.get('cost', 0.0):.4f} spent; continue with: rotscope run --resume {run_dir} {larger}",
            EXIT_BUDGET,
        )


@app.command("plan")
def plan_command(
    config: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Plan file (JSON) to write.")],
    power: Annotated[
        float | None,
        typer.Option(
            "--power",
            help="Pick cases_per_task so that an identical candidate PASSes with this probability "
            "(generated families); a case file with fewer cases exits 2.",
        ),
    ] = None,
) -> None:
    """Freeze a pre-registration manifest: digests, grid, seeds, decoding and the gate's analysis,
    with what the gate can decide at its size (simulated through the gate's own tests)."""
    from rotscope.execution.workflows.dry_run import planned_manifest
    from rotscope.plan.manifest import write_manifest
    from rotscope.report.verdict import power_lines

    def body() -> None:
        if power is not None and not 0.0 < power < 1.0:
            raise BadInput(f"--power {power}: a probability between 0 and 1 (e.g. 0.8)")
        experiment = _build(config, {})
        manifest, plan = planned_manifest(experiment)
        if power is not None:
            experiment, manifest, plan = _sized(experiment, plan, power, config)
        digest = write_manifest(manifest, output)
        grid = manifest["grid"]
        console.print(
            f"plan {digest} -> {output}: {manifest['planned']['work_items']} work items, tasks "
            f"{','.join(grid['tasks'])}, lengths {grid['lengths']}, {len(grid['positions'])} positions, "
            f"{grid['repetitions']} repetition(s); cases {manifest['cases']['digest']}, filler "
            f"{manifest['filler']['digest']}, template {manifest['subject']['template_digest']}",
            markup=False,
        )
        for line in power_lines(_plan_power(experiment, plan)):
            console.print(line, markup=False, soft_wrap=True)

    _guarded(body)


def _plan_power(experiment: ExperimentConfig, plan: Any) -> dict[str, Any]:
    from rotscope.gate.sizing import Design, gate_power
    from rotscope.gate.verdict import rule_of
    from rotscope.plan.manifest import gate_slices

    design = Design.from_slices(gate_slices(plan, experiment.gate.slice_fields))
    return gate_power(design, rule_of(experiment.gate))


def _sized(
    experiment: ExperimentConfig, plan: Any, power: float, config: Path
) -> tuple[ExperimentConfig, dict[str, Any], Any]:
    """``experiment`` with the ``cases_per_task`` at which an identical candidate PASSes with
    probability ``power``; ``BadInput`` where a task cannot have that many cases."""
    from rotscope.execution.workflows.dry_run import planned_manifest
    from rotscope.gate.sizing import Design, cases_for_pass
    from rotscope.gate.verdict import rule_of
    from rotscope.plan.manifest import gate_slices

    design = Design.from_slices(gate_slices(plan, experiment.gate.slice_fields))
    if not design.keys:
        raise BadInput("plan --power: the plan fills no gate slice")
    needed = cases_for_pass(design, rule_of(experiment.gate), power)
    if needed is None:
        raise BadInput(
            f"plan --power {power:.2f}: no number of cases up to 1,000 per task reaches it at margin "
            f"{experiment.gate.margin} over {len(design.keys)} slices; widen gate.margin or use fewer slices"
        )
    if experiment.limit is not None and experiment.limit < needed:
        raise BadInput(
            f"plan --power {power:.2f}: {needed} cases per task needed, but limit {experiment.limit} keeps "
            "fewer; raise or drop limit"
        )
    sized = build_config({**experiment.model_dump(mode="json"), "cases_per_task": needed}, str(config))
    manifest, sized_plan = planned_manifest(sized)
    have = Design.from_slices(gate_slices(sized_plan, sized.gate.slice_fields)).cases_per_task()
    short = {task: count for task, count in have.items() if count < needed}
    if short:
        task, count = next(iter(short.items()))
        raise BadInput(
            f"plan --power {power:.2f}: an identical candidate PASSes with that probability from {needed} "
            f"cases per task; task {task} has {count} (add {needed - count} cases)"
        )
    if have == design.cases_per_task():  # no generated family: the case files already suffice
        console.print(
            f"{needed} cases per task let an identical candidate PASS with probability at least {power:.2f}; "
            f"the plan has {', '.join(f'{task} {count}' for task, count in have.items())}",
            markup=False,
        )
        return experiment, *planned_manifest(experiment)
    console.print(
        f"cases_per_task {needed}: an identical candidate PASSes with probability at least {power:.2f}; "
        f"runs under this plan need cases_per_task: {needed} in {config}",
        markup=False,
    )
    return sized, manifest, sized_plan


@app.command()
def gate(
    baseline: Annotated[Path, typer.Option("--baseline", help="Baseline run folder.")],
    candidate: Annotated[Path, typer.Option("--candidate", help="Candidate run folder.")],
    plan: Annotated[Path | None, typer.Option("--plan", help="Frozen plan whose analysis to apply.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the release record JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a short Markdown summary for a pull-request comment.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Release record file; default CANDIDATE/gate-vs-BASELINE.json."),
    ] = None,
) -> None:
    """Release verdict of a candidate against a baseline: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    from rotscope.analysis.summary import load_summary
    from rotscope.gate.verdict import evaluate
    from rotscope.plan.manifest import read_manifest
    from rotscope.report.markdown import gate_markdown
    from rotscope.report.verdict import print_record

    def body() -> dict[str, Any]:
        if as_json and markdown:
            raise BadInput("--json and --markdown: choose one")
        frozen = read_manifest(plan) if plan is not None else None
        return evaluate(baseline, candidate, frozen)

    record = _guarded(body)
    target = output or candidate / f"gate-vs-{baseline.resolve().name}.json"
    _guarded(lambda: write_output(target, json.dumps(record, indent=2) + "\n", "gate"))
    if as_json:
        sys.stdout.write(json.dumps(record, indent=2) + "\n")
    elif markdown:
        summaries = _guarded(lambda: (load_summary(baseline), load_summary(candidate)))
        sys.stdout.write(gate_markdown(record, *summaries))
    else:
        print_record(record, console)
        console.print(f"release record: {target}", markup=False)
    raise typer.Exit(record["exit_code"])


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a short Markdown summary for a pull-request comment.")
    ] = False,
) -> None:
    """Show a run: heatmap and a line per length, the summary JSON, or a Markdown summary; a search
    folder: its result."""
    from rotscope.analysis.summary import load_summary
    from rotscope.execution.workflows.search_run import is_search_folder
    from rotscope.report.markdown import run_markdown
    from rotscope.report.search import search_lines
    from rotscope.report.terminal import print_summary

    if is_search_folder(run_dir):
        _refuse_unfinished_search(run_dir)
    if (run_dir / "search.json").is_file():
        record = _search_record(run_dir)
        if as_json:
            sys.stdout.write(json.dumps(record, indent=2) + "\n")
        else:
            for line in search_lines(record):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        return

    def body() -> dict[str, Any]:
        if as_json and markdown:
            raise BadInput("--json and --markdown: choose one")
        return load_summary(run_dir)

    summary = _guarded(body)
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    elif markdown:
        sys.stdout.write(run_markdown(summary))
    else:
        print_summary(summary, console)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="HTML file; default DIR/report.html.")
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option("--figures", help="Also write the figures as SVG and PNG into this folder (kaleido)."),
    ] = None,
) -> None:
    """Write a self-contained HTML report (opens offline), and with --figures its figures as files."""
    from rotscope.analysis.summary import load_summary
    from rotscope.execution.workflows.search_run import is_search_folder
    from rotscope.report.figures import write_figures
    from rotscope.report.html import write_report
    from rotscope.report.search_html import write_search_report

    if is_search_folder(run_dir):
        _refuse_unfinished_search(run_dir)
        if figures is not None:
            _fail("--figures: a search folder's figure is in its report; use it on a step (DIR/steps/…)")
        target = output or run_dir / "report.html"
        record = _search_record(run_dir)
        console.print(f"report: {_guarded(lambda: write_search_report(record, run_dir.name, target))}")
        return
    if figures is not None:  # first: a missing extra is refused before anything is written
        folder = figures
        for path in _guarded(lambda: write_figures(load_summary(run_dir), folder)):
            console.print(f"figure: {terminal_safe(str(path))}", markup=False)
    written = _guarded(lambda: write_report(run_dir, output or run_dir / "report.html"))
    console.print(f"report: {written}")


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    format: Annotated[
        str, typer.Option("--format", help="csv, jsonl, parquet, or inspect (an Inspect log, -o RUN.eval).")
    ] = "csv",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File; default stdout.")] = None,
) -> None:
    """Export one row per work item (with --format inspect: one Inspect sample per work item)."""
    from rotscope.report.export import export_rows

    if format == "inspect":
        _guarded(lambda: _export_inspect(run_dir, output))
        return
    _guarded(lambda: export_rows(run_dir, format, output, sys.stdout))


def _export_inspect(run_dir: Path, output: Path | None) -> None:
    """The run as an Inspect log; the extra is checked before the run is read."""
    from rotscope.integrations.inspect import require_inspect

    require_inspect("--format inspect")
    if output is None:
        raise BadInput("--format inspect needs -o FILE.eval")
    from rotscope.integrations.inspect.log import export_inspect_log

    samples = export_inspect_log(run_dir, output)
    console.print(f"{samples} samples -> {output}", markup=False, highlight=False, soft_wrap=True)


@app.command("cases")
def cases_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    failing: Annotated[
        bool, typer.Option("--failing", help="Only cases that failed somewhere, with origin and pin.")
    ] = False,
    pin: Annotated[
        bool, typer.Option("--pin/--no-pin", help="With --failing: pin each case where it failed.")
    ] = True,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Case file (JSONL); default stdout.")
    ] = None,
    since: Annotated[
        Path | None,
        typer.Option("--since", help="With --failing: only layouts that did not fail in this baseline run."),
    ] = None,
) -> None:
    """Write a run's cases as case-file lines; --failing turns its failures into permanent cases."""
    from rotscope.execution.state.case_export import export_cases

    def body() -> None:
        export = export_cases(run_dir, failing=failing, pin=pin, since=since)
        text = "".join(jsonl_line(line) for line in export.lines)
        for reason in export.skipped:
            errors.print(f"left out: {reason}", markup=False, highlight=False, soft_wrap=True)
        if output is None:
            sys.stdout.write(text)
            return
        write_output(output, text, "cases")
        found = f" from {export.failing_rows} failing rows" if failing else ""
        console.print(f"{len(export.lines)} cases{found} -> {output}", markup=False, highlight=False)

    _guarded(body)


@app.command()
def perturb(
    source: Annotated[Path, typer.Argument(help="Folder of the Python code base to rewrite.")],
    renames: Annotated[Path, typer.Option("--renames", help="Rename map (YAML).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="New folder for the perturbed copy.")],
) -> None:
    """Rewrite a Python code base with renamed identifiers, changed literals and injected code."""
    from rotscope.filler.perturb import load_map, perturb_tree

    def body() -> None:
        report = perturb_tree(source, load_map(renames), output, map_name=str(renames))
        for section, counts in (
            ("rename", report.renames),
            ("literal", report.literals),
            ("inject", report.inject),
        ):
            for label, count in counts.items():
                console.print(f"{section} {label}: {count}", markup=False, highlight=False)
        console.print(
            f"{report.rewritten} files rewritten, {report.copied} copied unchanged into {output}",
            soft_wrap=True,
        )

    _guarded(body)


@app.command()
def models() -> None:
    """List every registered backend with its hint, where it comes from and the models it can find,
    then where the task families, filler sources and scorers come from."""

    def body() -> None:
        from rotscope.backends import BACKENDS

        for provider, entry in BACKENDS.items():
            console.print(f"[bold]{escape(provider)}[/bold]")
            console.print(f"  {entry.hint}", markup=False, soft_wrap=True)
            console.print(f"  from {BACKENDS.provider(provider).describe()}", markup=False, soft_wrap=True)
            for found in entry.models() if entry.models is not None else ():
                console.print(f"  {found}", markup=False, soft_wrap=True)
        for line in _component_origins(backends=False):
            console.print(line, markup=False, soft_wrap=True)

    _guarded(body)


def _component_origins(*, backends: bool) -> list[str]:
    """``task families from rotscope 0.1.0 (built-in): niah, ...``: one line per kind and provider,
    read from the entry points (no component is imported)."""
    from rotscope.backends import BACKENDS
    from rotscope.filler import FILLER_SOURCES
    from rotscope.registry import Registry
    from rotscope.scoring import SCORERS
    from rotscope.tasks import TASKS

    kinds: list[tuple[str, Registry[Any]]] = [("backends", BACKENDS)] if backends else []
    kinds += [("task families", TASKS), ("filler sources", FILLER_SOURCES), ("scorers", SCORERS)]
    return [
        f"{label} from {origin}: {', '.join(names)}"
        for label, registry in kinds
        for origin, names in registry.origins().items()
    ]


@app.command()
def doctor() -> None:
    """Check this machine for a run: engine build, CPU, extra buffers, prefill speed, tokenizer, extras."""
    from rich.table import Table

    from rotscope.execution.doctor import run_checks

    console.print(
        "checking this machine (the engine checks load the bundled model once per timed setting: "
        "about 10 s on an idle 2-core machine)"
    )
    checks = run_checks()
    table = Table("check", "status", "detail", show_lines=False)
    for check in checks:
        style = {"ok": "green", "warn": "yellow", "FAIL": "bold red"}[check.status]
        table.add_row(check.name, f"[{style}]{check.status}[/{style}]", escape(check.detail))
    console.print(table)
    console.print("components:", markup=False)
    for line in _guarded(lambda: _component_origins(backends=True)):
        console.print(f"  {line}", markup=False, soft_wrap=True)
    failed = [check for check in checks if check.status == "FAIL"]
    if failed:
        _fail(f"doctor: {failed[0].name}: {failed[0].detail}")
    console.print("ready for a run", markup=False)


def main() -> None:
    from rotscope.backends.process import stop_all

    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        app()
    except BadInput as error:  # one no command guards itself against (stale package metadata)
        try:
            _fail(str(error))
        except typer.Exit as stop:
            raise SystemExit(stop.exit_code) from None
    finally:
        stop_all()  # a command still running (an interrupt outside any call's own clean-up)
