"""rotscope show."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.json_out import json_text
from rotscope.cli.common import SCORE_HELP, _guarded, app, console
from rotscope.errors import BadInput

if TYPE_CHECKING:
    from rotscope.records.summary import Summary


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="Run folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a short Markdown summary for a pull-request comment.")
    ] = False,
    score: Annotated[str | None, typer.Option("--score", help=SCORE_HELP)] = None,
    definitions: Annotated[
        bool,
        typer.Option(
            "--definitions",
            help="Print each task's effective length under every published definition, with its source.",
        ),
    ] = False,
) -> None:
    """Show a run: heatmap and a line per length, the summary JSON, or a Markdown summary; a search
    folder: its result."""
    from rotscope.analysis.summary import load_summary
    from rotscope.modes.dispatch import read_search_record, refuse_unfinished_search
    from rotscope.report.markdown import run_markdown
    from rotscope.report.terminal import print_summary
    from rotscope.search.lines import search_lines
    from rotscope.search.run import is_search_folder

    if is_search_folder(run_dir):
        _guarded(lambda: refuse_unfinished_search(run_dir))
    if (run_dir / "search.json").is_file():
        record = _guarded(lambda: read_search_record(run_dir))
        if as_json:
            sys.stdout.write(json_text(record.model_dump(), indent=2) + "\n")
        else:
            for line in search_lines(record):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        return

    def body() -> Summary:
        chosen = [name for name, on in (("--json", as_json), ("--markdown", markdown),
                                         ("--definitions", definitions)) if on]  # fmt: skip
        if len(chosen) > 1:
            raise BadInput(f"{' and '.join(chosen)}: choose one")
        return load_summary(run_dir, score)

    summary = _guarded(body)
    if as_json:
        sys.stdout.write(json_text(summary.model_dump(), indent=2) + "\n")
    elif markdown:
        sys.stdout.write(run_markdown(summary))
    elif definitions:
        from rotscope.report.definitions_table import definitions_lines

        for line in definitions_lines(summary):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        print_summary(summary, console, str(run_dir))
