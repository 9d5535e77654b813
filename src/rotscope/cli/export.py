"""rotscope export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rotscope.cli.common import _guarded, app, console
from rotscope.errors import BadInput


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
    from rotscope.search.run import is_search_folder

    if is_search_folder(run_dir):
        _guarded(lambda: _refuse_search_folder(run_dir))
    if format == "inspect":
        _guarded(lambda: _export_inspect(run_dir, output))
        return
    _guarded(lambda: export_rows(run_dir, format, output, sys.stdout))


def _refuse_search_folder(run_dir: Path) -> None:
    """A search folder holds no rows of its own: each step under ``DIR/steps`` is a run folder."""
    raise BadInput(
        f"{run_dir}: a search folder has no rows of its own; export one of its steps, a run folder "
        f"each (rotscope export {run_dir / 'steps'}/NAME)"
    )


def _export_inspect(run_dir: Path, output: Path | None) -> None:
    """The run as an Inspect log; the extra is checked before the run is read."""
    from rotscope.integrations.inspect import require_inspect

    require_inspect("--format inspect")
    if output is None:
        raise BadInput("--format inspect needs -o FILE.eval")
    from rotscope.integrations.inspect.log import export_inspect_log

    samples = export_inspect_log(run_dir, output)
    console.print(f"{samples} samples -> {output}", markup=False, highlight=False, soft_wrap=True)
