"""rotscope cases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rotscope._util.jsonl import jsonl_line
from rotscope.cli.common import _guarded, app, console, errors
from rotscope.errors import BadInput, write_output

CHECK = "check"
"""``rotscope cases check FILE``: the overlap check of a case file, not a run folder's cases."""


@app.command("cases")
def cases_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder; or `check` followed by a case file.")],
    case_file: Annotated[
        Path | None, typer.Argument(help="With `check`: the case file (JSONL) whose overlap to check.")
    ] = None,
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
    """Write a run's cases as case-file lines; --failing turns its failures into permanent cases.

    `rotscope cases check FILE` names the cases of a case file whose question shares content words
    with its evidence (string matching can answer them): exit 1 when any does, 0 when none."""
    from rotscope.execution.state.case_export import export_cases

    if case_file is not None or (str(run_dir) == CHECK and not run_dir.is_dir()):

        def check() -> int:
            if str(run_dir) != CHECK or case_file is None:
                raise BadInput(f"cases: one run folder, or `cases check FILE` (not {run_dir} {case_file})")
            return check_overlap(case_file)

        raise typer.Exit(_guarded(check))

    def body() -> None:
        export = export_cases(run_dir, failing=failing, pin=pin, since=since)
        text = "".join(jsonl_line(line) for line in export.lines)
        for reason in export.skipped:
            errors.print(f"left out: {reason}", markup=False, highlight=False, soft_wrap=True)
        for note in export.notes:
            errors.print(f"not exact: {note}", markup=False, highlight=False, soft_wrap=True)
        if output is None:
            sys.stdout.write(text)
            return
        write_output(output, text, "cases")
        found = f" from {export.failing_rows} failing rows" if failing else ""
        console.print(f"{len(export.lines)} cases{found} -> {output}", markup=False, highlight=False)

    _guarded(body)


def check_overlap(path: Path) -> int:
    """The overlap check's screen; 1 where a case is answerable by string matching, else 0."""
    from rotscope._util.safe_text import terminal_safe
    from rotscope.tasks.cases import read_case_file
    from rotscope.tasks.overlap import case_overlaps

    overlaps = case_overlaps(read_case_file(path))
    flagged = [overlap for overlap in overlaps if overlap.string_matchable]
    console.print(
        f"{len(overlaps)} cases in {terminal_safe(str(path))}: {len(flagged)} share content words with their "
        "evidence (string matching can answer them), "
        f"{len(overlaps) - len(flagged)} share none (the nolima family's rule: no shared content word)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for overlap in flagged:
        words = ", ".join(overlap.shared)
        console.print(
            f"  {terminal_safe(overlap.case_id)}: {terminal_safe(words)}", markup=False, highlight=False
        )
    return 1 if flagged else 0
