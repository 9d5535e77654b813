"""rotscope compare."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.json_out import record_text
from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import SCORE_HELP, _guarded, app, console, errors
from rotscope.errors import BadInput

if TYPE_CHECKING:
    from rotscope.compare.analysis import ComparedRun
    from rotscope.compare.record import Comparison
    from rotscope.execution.state.unfinished import Progress
    from rotscope.records.summary import Summary


def _run_folders(folders: list[Path]) -> list[Path]:
    """Each folder given, a ``--models`` session folder as its subjects' run folders in order."""
    from rotscope.modes.models_session import is_models_session, session_subjects

    paths: list[Path] = []
    for folder in folders:
        if is_models_session(folder):
            paths += [folder / name for name in session_subjects(folder)]
        elif (folder / "run.db").is_file():
            paths.append(folder)
        else:
            raise BadInput(f"compare: {folder} is not a run folder (no run.db) nor a --models session")
    return paths


def _progress(name: str, folder: Path, summary: Summary) -> Progress:
    from rotscope.execution.state.unfinished import Progress

    items = summary.items
    return Progress(name, folder, items.total, items.done, items.errors)


def _refuse_unfinished(runs: list[ComparedRun]) -> None:
    """A folder with items still pending is refused, every such folder named with the command that
    goes on: a leaderboard would rank runs on different items as if they were whole."""
    unfinished = [p for p in (_progress(r.name, r.path, r.summary) for r in runs) if not p.complete]
    if unfinished:
        named = "; ".join(progress.line() for progress in unfinished)
        raise BadInput(f"compare: unfinished run folders, compared only once finished: {named}")


@app.command()
def compare(
    folders: Annotated[
        list[Path], typer.Argument(help="Run folders (two or more), or a --models session folder.")
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Also write the comparison as one HTML file.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the leaderboards as Markdown tables.")
    ] = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print the rows (one per model x task x length) as CSV.")
    ] = False,
    figures: Annotated[
        Path | None,
        typer.Option(
            "--figures", help="Also write the overlay and heat maps as SVG and PNG into this folder."
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            help="Also write the verdicts as JUnit XML for CI: a length where a model is worse fails.",
        ),
    ] = None,
    score: Annotated[str | None, typer.Option("--score", help=SCORE_HELP)] = None,
    definition: Annotated[
        str | None,
        typer.Option(
            "--definition",
            help="Rank the leaderboards by this effective-length definition (nolima-0.85, absolute-0.856, "
            "longscore, auc-L, within-noise; or its part before '-': auc). Default: nolima's.",
        ),
    ] = None,
) -> None:
    """Compare runs on the same items: leaderboards and paired verdicts (Holm over pairs x lengths).

    Runs whose cases, lengths, positions, filler or seeds differ are refused, naming the first
    field that differs."""
    from rotscope.compare.analysis import build_comparison, load_runs
    from rotscope.compare.table import comparison_csv, comparison_markdown, print_comparison
    from rotscope.records import RECORDS

    folders_of: dict[str, Path] = {}

    def body() -> tuple[Comparison, str, dict[str, Summary]]:
        if sum((as_json, markdown, as_csv)) > 1:
            raise BadInput("--json, --markdown and --csv: choose one")
        runs = load_runs(_run_folders(folders), score)
        _refuse_unfinished(runs)
        comparison = build_comparison(runs, definition=definition)
        text = record_text(comparison.model_dump(), "comparison", indent=2)
        RECORDS["comparison"].validate_json(text)  # the contract, checked before anything is shown
        folders_of.update({run.name: run.path for run in runs})
        return comparison, text, {run.name: run.summary for run in runs}

    comparison, text, summaries = _guarded(body)
    for name, summary in summaries.items():  # rows in error are named, never ranked as if answered
        if line := _progress(name, folders_of[name], summary).line():
            errors.print(f"note: {terminal_safe(line)}", markup=False, soft_wrap=True)
    # The files written are named on stderr when stdout carries JSON, Markdown or CSV.
    paths = errors if as_json or markdown or as_csv else console
    if figures is not None:
        from rotscope.compare.figures import write_comparison_figures

        folder = figures
        for path in _guarded(lambda: write_comparison_figures(comparison, summaries, folder)):
            paths.print(f"figure: {terminal_safe(str(path))}", markup=False, soft_wrap=True)
    if junit is not None:
        from rotscope.compare.junit import comparison_junit
        from rotscope.errors import write_output

        document, target_xml = comparison_junit(comparison), junit
        _guarded(lambda: write_output(target_xml, document, "--junit"))
        paths.print(f"junit: {terminal_safe(str(target_xml))}", markup=False, soft_wrap=True)
    if output is not None:
        from rotscope.compare.html import write_comparison

        target = output
        written = _guarded(lambda: write_comparison(comparison, summaries, target))
        paths.print(f"comparison: {terminal_safe(str(written))}", markup=False, soft_wrap=True)
    if as_json:
        sys.stdout.write(text + "\n")
    elif markdown:
        sys.stdout.write(comparison_markdown(comparison))
    elif as_csv:
        sys.stdout.write(comparison_csv(comparison))
    elif output is None and figures is None and junit is None:
        print_comparison(comparison, console)
