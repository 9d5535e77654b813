"""rotscope gate."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.inside import inside
from rotscope._util.json_out import record_text
from rotscope.cli.common import SCORE_HELP, _guarded, app, console
from rotscope.errors import BadInput, write_output

if TYPE_CHECKING:
    from rotscope.gate.record import GateRecord


@app.command()
def gate(
    baseline: Annotated[Path, typer.Option("--baseline", help="Baseline run folder.")],
    candidate: Annotated[Path, typer.Option("--candidate", help="Candidate run folder.")],
    plan: Annotated[Path | None, typer.Option("--plan", help="Frozen plan whose analysis to apply.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the release record JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a short Markdown summary for a pull-request comment.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Release record file; default CANDIDATE/gate-vs-BASELINE.json."),
    ] = None,
    score: Annotated[str | None, typer.Option("--score", help=SCORE_HELP)] = None,
    junit: Annotated[
        Path | None,
        typer.Option("--junit", help="Also write the verdict as JUnit XML (a test case per slice) for CI."),
    ] = None,
) -> None:
    """Release verdict of a candidate against a baseline: exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
    from rotscope.analysis.summary import load_summary
    from rotscope.gate.markdown import gate_markdown
    from rotscope.gate.verdict import evaluate
    from rotscope.gate.view import print_record
    from rotscope.plan.manifest import read_manifest
    from rotscope.records import RECORDS

    def body() -> GateRecord:
        if as_json and markdown:
            raise BadInput("--json and --markdown: choose one")
        frozen = read_manifest(plan) if plan is not None else None
        return evaluate(baseline, candidate, frozen, score)

    record = _guarded(body)
    text = _guarded(lambda: record_text(record.model_dump(mode="json"), "gate", indent=2)) + "\n"
    # The record as written follows its model (schemas/gate.schema.json); a mismatch is a bug.
    RECORDS["gate"].validate_json(text)
    target = output or candidate / f"gate-vs-{baseline.resolve().name}.json"
    if output is None:  # the candidate folder's own file: never written through a link leading out
        _guarded(lambda: inside(candidate, target, what="gate"))
    _guarded(lambda: write_output(target, text, "gate"))
    if junit is not None:
        from rotscope.gate.junit import gate_junit

        document = gate_junit(record)
        _guarded(lambda: write_output(junit, document, "--junit"))
    if as_json:
        sys.stdout.write(text)
    elif markdown:
        summaries = _guarded(
            lambda: (load_summary(baseline, record.score), load_summary(candidate, record.score))
        )
        sys.stdout.write(gate_markdown(record, *summaries))
    else:
        print_record(record, console)
        console.print(f"release record: {target}", markup=False)
    raise typer.Exit(record.exit_code)
