"""rotscope cases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rotscope._util.jsonl import jsonl_line
from rotscope.cli.common import _guarded, app, console, errors
from rotscope.errors import write_output


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
