"""rotscope run."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import EXIT_BUDGET, _fail, _guarded, _numbers, _split, _warn, app, console


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
        str | None,
        typer.Option(
            "--base-url",
            help="Server of an openai/NAME model (any compatible API); serve/NAME: several, comma separated.",
        ),
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
    models: Annotated[
        str | None,
        typer.Option(
            "--models",
            help="A,B,C (subject names or models): all in one interleaved session on one plan, a run "
            "folder per subject in OUT.",
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
    score: Annotated[
        str | None,
        typer.Option(
            "--score",
            help="accuracy, likelihood (the gold answer's probability, prefill only) or both; "
            "default both where the backend reads likelihoods.",
        ),
    ] = None,
    inject: Annotated[
        list[str] | None,
        typer.Option(
            "--inject",
            help="An assembly fault on every verified prompt (repeatable or comma-separated): trim-head, "
            "trim-tail, tokenizer-shift, reorder, add-passage, duplicate-distractor, smaller-window "
            "(docs/gates.md, 'Injected assembly faults').",
        ),
    ] = None,
) -> None:
    """Run an experiment (or continue one with --resume) and show its heatmap."""
    from rotscope.analysis.summary import load_summary
    from rotscope.modes import dispatch
    from rotscope.report.dry_run import models_total_line, pair_total_line, print_dry_run
    from rotscope.report.progress import progress_reporter
    from rotscope.report.terminal import print_summary
    from rotscope.search.lines import print_search_dry_run

    def overrides() -> dict[str, Any]:
        return {
            "model": model,
            "tasks": _split(task),
            "lengths": _numbers(lengths, int, "lengths"),
            "depths": _numbers(depths, float, "depths"),
            "trials": trials,
            "limit": limit,
            "seed": seed,
            "out": str(out) if out else None,
            "max_cost": max_cost,
            "score": score,
            "inject": inject or None,
            "cache": {"enabled": False} if no_cache else None,
        }

    options = dispatch.RunOptions(
        config=config,
        overrides=overrides,
        sections={
            "remote": {"base_url": base_url, "api_key_env": api_key_env},
            "executor": {"kind": executor},
        },
        model=model,
        out=out,
        resume=resume,
        dry_run=dry_run,
        max_cost=max_cost,
        no_cache=no_cache,
        base_url=base_url,
        api_key_env=api_key_env,
        plan_file=plan_file,
        allow_deviation=allow_deviation,
        pair=pair,
        models=models,
        subjects_file=subjects_file,
        search=search,
        max_calls=max_calls,
        max_tokens=max_tokens,
        executor=executor,
    )

    def body() -> None:
        outcome = dispatch.run_from_options(options, progress=lambda: progress_reporter(console), warn=_warn)
        if isinstance(outcome, dispatch.SearchFinished):
            _print_search(outcome.folder)
        elif isinstance(outcome, dispatch.SearchPlanned):
            print_search_dry_run(outcome.dry_run, console, _warn)
        elif isinstance(outcome, dispatch.PairFinished):
            _show_pair(outcome.out)
        elif isinstance(outcome, dispatch.ModelsFinished):
            _show_models(outcome.out)
        elif isinstance(outcome, dispatch.ModelsPlanned):
            console.print(models_total_line(outcome.dry_runs), markup=False)
            for name, planned in outcome.dry_runs.items():
                console.print(f"{name}:", markup=False)
                print_dry_run(planned, console)
        elif isinstance(outcome, dispatch.PairPlanned):
            for role, planned in outcome.dry_runs.items():
                console.print(f"{role}:", markup=False)
                print_dry_run(planned, console)
            console.print(pair_total_line(outcome.dry_runs), markup=False)
        elif isinstance(outcome, dispatch.Planned):
            print_dry_run(outcome.dry_run, console)
        else:
            typed = _as_typed(outcome.run_dir, out or resume)
            console.print(f"run folder: {terminal_safe(typed)}", markup=False)
            print_summary(load_summary(outcome.run_dir), console, typed)  # the headline, the next step

    _guarded(body)


def _as_typed(run_dir: Path, typed: Path | None) -> str:
    """The run folder as the user typed it (``--out``, ``--resume``); a default folder relative to
    the working directory where it lies inside it, so both ways print alike."""
    if typed is not None:
        return str(typed)
    try:
        return str(run_dir.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(run_dir)


def _show_pair(out: Path) -> None:
    """Each subject's heatmap, then where the two run folders are."""
    from rotscope.analysis.summary import load_summary
    from rotscope.modes.pair import SUBJECTS
    from rotscope.report.terminal import print_summary

    for role in SUBJECTS:
        console.print(f"{role}:", markup=False)
        print_summary(load_summary(out / role), console)
    folders = ", ".join(terminal_safe(str(out / role)) for role in SUBJECTS)
    console.print(f"paired run folders: {folders}; judge them with rotscope gate", markup=False)


def _show_models(out: Path) -> None:
    """Each subject's heatmap, then how the prompts relate and where the folders are."""
    from rotscope.analysis.summary import load_summary
    from rotscope.modes.models_session import session_prompts, session_subjects
    from rotscope.report.terminal import print_summary

    names = session_subjects(out)
    for name in names:
        console.print(f"{name}:", markup=False)
        print_summary(load_summary(out / name), console)
    console.print(f"prompts: {session_prompts(out)}", markup=False)
    folders = ", ".join(terminal_safe(str(out / name)) for name in names)
    console.print(f"session run folders: {folders}", markup=False)
    console.print(
        f"Next: rotscope compare {shlex.quote(terminal_safe(str(out)))} (a leaderboard and paired verdicts)",
        markup=False,
        highlight=False,
    )


def _print_search(run_dir: Path) -> None:
    """The search's result lines; a budget stop exits 4 like --max-cost, the results kept."""
    from rotscope.modes.dispatch import budget_stop, read_search_record
    from rotscope.search.lines import search_lines

    record = read_search_record(run_dir)
    for line in search_lines(record):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"search folder: {terminal_safe(str(run_dir))}", markup=False)
    stop = budget_stop(record, run_dir)
    if stop is not None:
        _fail(stop, EXIT_BUDGET)
