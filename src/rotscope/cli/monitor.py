"""rotscope monitor: ``ingest`` production outcome records (privacy-safe, allow-listed) into a
monitoring store and ``show`` their rates."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.json_out import record_text
from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import _Commands, _guarded, _warn, app, console
from rotscope.errors import BadInput
from rotscope.report.lines import say

if TYPE_CHECKING:
    from rotscope.monitor.record import MonitorRates

monitor_app = typer.Typer(
    cls=_Commands, no_args_is_help=True, help="Watch production outcomes without keeping a prompt."
)
app.add_typer(monitor_app, name="monitor")


@monitor_app.command("ingest")
def ingest(
    store: Annotated[Path, typer.Argument(help="The monitoring store (an SQLite file; made when missing).")],
    file: Annotated[Path, typer.Argument(help="A JSONL file: one outcome record per line.")],
    skip_bad: Annotated[
        bool,
        typer.Option("--skip-bad", help="Skip and count refused records instead of refusing the whole file."),
    ] = False,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="A monitor config file (YAML: dimensions: {NAME: [VALUE, ...]}) declaring label values; "
            "added to the store's vocabulary.",
        ),
    ] = None,
    hash_labels: Annotated[
        bool,
        typer.Option(
            "--hash-labels", help="Store an undeclared label value as its hash under the store's salt."
        ),
    ] = False,
    record_source_name: Annotated[
        bool,
        typer.Option(
            "--record-source-name", help="Keep the file's name with the ingest (default: its sha256 only)."
        ),
    ] = False,
) -> None:
    """Ingest outcome records: the whole file or nothing.

    A refused record (a field not on the allow-list, a label value or dimension the store's
    vocabulary does not declare) stops the ingest before anything is stored, naming its line and
    field; --skip-bad stores the others. Re-ingesting a file stores nothing twice."""
    from rotscope.monitor.ingest import ingest as run_ingest
    from rotscope.monitor.vocabulary import read_vocabulary

    result = _guarded(
        lambda: run_ingest(
            store,
            file,
            skip_bad=skip_bad,
            warn=_warn,
            labels=read_vocabulary(labels) if labels is not None else None,
            hash_labels=hash_labels,
            record_name=record_source_name,
        )
    )
    refused = f", {result.refused} refused and skipped" if skip_bad else ""
    console.print(
        f"{result.records} records read, {result.added} new, "
        f"{result.records - result.added} already stored{refused}: {store}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@monitor_app.command("show")
def show(
    store: Annotated[Path, typer.Argument(help="The monitoring store.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the rates as JSON (the monitor record).")
    ] = False,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", help="A further dimension to break down by (repeatable); default all."),
    ] = None,
    position_bins: Annotated[
        int,
        typer.Option("--position-bins", help="Evidence-position bins: 3 (thirds) or 5 (quintiles), 2-10."),
    ] = 3,
    baseline_window: Annotated[
        str | None,
        typer.Option(
            "--baseline-window",
            help="FROM..TO (ISO times): test the later records against this window's, per bin.",
        ),
    ] = None,
    otlp_file: Annotated[
        Path | None,
        typer.Option(
            "--otlp-file", help="Append the rates as OpenTelemetry gen_ai.evaluation.result events."
        ),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option("--otlp-endpoint", help="Also post them to this OTLP/HTTP collector (URL; /v1/logs)."),
    ] = None,
) -> None:
    """Outcome rates by length bin, evidence-position bin and each further dimension, with
    intervals; forbidden claims on their own line.

    With --baseline-window, the answered rate of later records against the window's, by the
    canary's anytime-valid sequential test."""
    from rotscope.monitor.rates import lines, rates
    from rotscope.monitor.store import MonitorStore
    from rotscope.records import RECORDS

    def body() -> str:
        if not 2 <= position_bins <= 10:
            raise BadInput("--position-bins: between 2 and 10")
        with MonitorStore.read(store) as opened:
            record = rates(opened, by=by or (), position_bins=position_bins)
            if baseline_window is not None:
                from rotscope.monitor.window import window_comparison

                # set only when asked for: the record leaves the key out otherwise
                record = record.model_copy(
                    update={
                        "baseline_window": window_comparison(
                            opened, baseline_window, position_bins=position_bins
                        )
                    }
                )
        # json.dumps of the dump, not pydantic's JSON: the text stays the one scripts read
        text = record_text(record.model_dump(), "monitor", indent=2)
        RECORDS["monitor"].validate_json(text)
        if otlp_file is not None or otlp_endpoint is not None:
            _emit(record, otlp_file, otlp_endpoint)
        if as_json:
            return text
        if record.baseline_window is None:
            return "\n".join(lines(record))
        from rotscope.monitor.window import window_lines

        return "\n".join([*lines(record), *window_lines(record.baseline_window)])

    text = _guarded(body)
    if as_json:
        sys.stdout.write(text + "\n")
    else:
        # each line wrapped after its clauses (a rate and its interval stay whole) to the width,
        # and nothing a terminal would act on printed raw
        for line in text.splitlines():
            say(console, terminal_safe(line))


def _emit(record: MonitorRates, otlp_file: Path | None, otlp_endpoint: str | None) -> None:
    """The rates as OTLP/JSON events (``monitor.otlp``): to the file, then the collector."""
    from rotscope.monitor.otlp import append_file, check_endpoint, logs_request, post, rate_events

    if otlp_endpoint is not None:
        check_endpoint(otlp_endpoint)
    request = logs_request(rate_events(record), scope="rotscope.monitor")
    if otlp_file is not None:
        append_file(otlp_file, request)
    failed = post(otlp_endpoint, request) if otlp_endpoint is not None else None
    if failed is not None:
        _warn(failed)


@monitor_app.command("report")
def report(
    store: Annotated[Path, typer.Argument(help="The monitoring store.")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="The file to write: FILE.html (offline), or FILE.md (Markdown)."),
    ] = None,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Markdown (to stdout, or to -o FILE.md) instead of HTML.")
    ] = False,
    baseline_window: Annotated[
        str | None,
        typer.Option(
            "--baseline-window",
            help="FROM..TO (ISO times): the ingest's reference against the canary; default the "
            "records before the canary's first check.",
        ),
    ] = None,
) -> None:
    """A report of the store: offline HTML (-o FILE.html) or Markdown (--markdown).

    The ingested answered rate over time per length bin × position bin with intervals, each
    canary's lower bounds on the drop per check against its margins, the alerts with their bins,
    forbidden claims on their own, and where canary and ingest disagree on a bin, both side by
    side."""
    from rotscope.errors import write_output
    from rotscope.monitor.report_data import report_data
    from rotscope.monitor.store import MonitorStore

    # -o FILE.md is Markdown whether or not --markdown is given (HTML in a .md file helps no one).
    markdown_out = as_markdown or (output is not None and Path(output).suffix.lower() in (".md", ".markdown"))

    def body() -> str | None:
        if output is None and not markdown_out:
            raise BadInput("monitor report: give -o FILE.html, or --markdown")
        with MonitorStore.read(store) as opened:
            data = report_data(opened, baseline_window=baseline_window)
        if markdown_out:
            from rotscope.monitor.report_markdown import markdown

            text = markdown(data)
            if output is None:
                return text
            write_output(output, text, "monitor report")
            return None
        from rotscope.monitor.report_html import write_monitor_report

        assert output is not None
        write_monitor_report(data, output)
        return None

    text = _guarded(body)
    if text is not None:
        sys.stdout.write(text)
    else:
        console.print(f"monitor report: {output}", markup=False, highlight=False, soft_wrap=True)
