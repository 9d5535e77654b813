"""rotscope doctor."""

from __future__ import annotations

from rich.markup import escape

from rotscope.cli.common import _fail, _guarded, app, console
from rotscope.cli.models import _component_origins


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
