"""rotscope perturb."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rotscope.cli.common import _guarded, app, console


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
