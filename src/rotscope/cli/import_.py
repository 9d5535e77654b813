"""rotscope import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import _guarded, app, console
from rotscope.errors import BadInput

INSPECT_SUFFIXES = (".eval", ".json")
"""Inspect AI's log formats."""


@app.command("import")
def import_results(
    file: Annotated[
        Path, typer.Argument(help="Per-item results: a .csv or .jsonl table, or an Inspect AI .eval log.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The run folder to make (new or empty).")],
) -> None:
    """Bring per-item results of another harness into a run folder that every view reads.

    The folder has no prompts, spans or verification, and every view says so. A bad file is one
    line naming its line and column (exit 2); the columns are in docs/commands.md."""

    def body() -> int:
        from rotscope.imports.folder import write_import

        if not file.exists():
            raise BadInput(f"{file}: no such file")
        if file.suffix.lower() in INSPECT_SUFFIXES:
            from rotscope.integrations.inspect import require_inspect

            require_inspect("rotscope import of an Inspect log")
            from rotscope.integrations.inspect.log_import import log_items

            items, tokenizer = log_items(file, str(file))
            return write_import(out, items, source=file, kind="inspect", tokenizer=tokenizer)
        from rotscope.imports.table import FORMATS, read_table

        table = read_table(file, str(file))
        return write_import(
            out,
            table.items,
            source=file,
            kind=FORMATS[file.suffix.lower()],
            tokenizer=table.tokenizer,
            extra={"ignored_columns": table.ignored_columns},
        )

    rows = _guarded(body)
    console.print(
        f"{rows} rows imported from {terminal_safe(file.name)} -> {terminal_safe(str(out))} "
        "(no prompts, spans or verification)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
