"""rotscope report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rotscope._util.inside import inside
from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import SCORE_HELP, _fail, _guarded, app, console


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="HTML file; default DIR/report.html.")
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            "--figures",
            help="Also write each task's figures as SVG, PNG and PDF into this folder (matplotlib).",
        ),
    ] = None,
    score: Annotated[str | None, typer.Option("--score", help=SCORE_HELP)] = None,
) -> None:
    """Write a self-contained HTML report (opens offline), and with --figures its figures as files."""
    from rotscope.analysis.summary import load_summary
    from rotscope.modes.dispatch import read_search_record, refuse_unfinished_search
    from rotscope.report.figure_files import write_figures
    from rotscope.report.html import write_report
    from rotscope.search.html import write_search_report
    from rotscope.search.run import is_search_folder

    if is_search_folder(run_dir):
        _guarded(lambda: refuse_unfinished_search(run_dir))
        if figures is not None:
            _fail("--figures: a search folder's figure is in its report; use it on a step (DIR/steps/…)")
        target = output or _own_file(run_dir)
        record = _guarded(lambda: read_search_record(run_dir))
        written = _guarded(lambda: write_search_report(record, run_dir.name, target))
        console.print(f"report: {terminal_safe(str(written))}", markup=False, soft_wrap=True)
        return
    if figures is not None:  # first: a missing extra is refused before anything is written
        folder = figures
        for path in _guarded(lambda: write_figures(load_summary(run_dir, score), folder)):
            # One line a path, never wrapped: each is copied as it is.
            console.print(f"figure: {terminal_safe(str(path))}", markup=False, soft_wrap=True)
    html = output or _own_file(run_dir)
    written = _guarded(lambda: write_report(run_dir, html, score))
    console.print(f"report: {terminal_safe(str(written))}", markup=False, soft_wrap=True)
    _mark_unfinished(run_dir)


def _mark_unfinished(run_dir: Path) -> None:
    """A report of an unfinished run is written (it shows what is done so far) and marked: its items
    pending and in error, and the command that goes on."""
    from rotscope.execution.state.unfinished import folder_progress

    if line := _guarded(lambda: folder_progress(run_dir)).line():
        console.print(f"unfinished: {terminal_safe(line)}", markup=False, soft_wrap=True)


def _own_file(run_dir: Path) -> Path:
    """``DIR/report.html``, the folder's own file: a link planted at its name that leads out of the
    folder is refused (one line, exit 2) rather than written through."""
    path = run_dir / "report.html"
    _guarded(lambda: inside(run_dir, path, what="report"))
    return path
