"""rotscope canary: parse, build, call ``rotscope.monitor.canary.loop`` (one check, exit code = its
status; or, with ``--every``, the loop of checks) and print each check's alert body."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rotscope._util.json_out import json_text
from rotscope._util.safe_text import terminal_safe
from rotscope.cli.common import SCORE_HELP, _build, _guarded, _warn, app, console, errors
from rotscope.errors import BadInput

if TYPE_CHECKING:
    from rotscope.monitor.canary.probes import Canary
    from rotscope.monitor.canary.record import CanaryAlert
    from rotscope.monitor.sequential import Margins
    from rotscope.monitor.store import MonitorStore


def _show(body: CanaryAlert, as_json: bool, as_markdown: bool, loop: bool) -> None:
    from rotscope.monitor.canary.alert import markdown, status_line

    if as_json:  # json.dumps of the dump, not pydantic's JSON: the text stays the one scripts read
        record = body.model_dump()
        sys.stdout.write(json_text(record, separators=(",", ":")) if loop else json_text(record, indent=2))
        sys.stdout.write("\n")
    elif as_markdown:
        sys.stdout.write(markdown(body) + ("\n" if loop else ""))
    else:
        console.print(terminal_safe(status_line(body)), markup=False, highlight=False, soft_wrap=True)
    sys.stdout.flush()


@app.command()
def canary(
    config: Annotated[Path, typer.Argument(help="The experiment YAML the baseline run was made with.")],
    baseline: Annotated[
        Path, typer.Option("--baseline", help="The baseline run folder (made by rotscope run).")
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The monitoring store (an SQLite file; made when missing).")
    ],
    every: Annotated[
        str | None,
        typer.Option("--every", help="Check in a loop at this interval (1h, 30m, 90s); stop with Ctrl-C."),
    ] = None,
    subject: Annotated[
        str | None,
        typer.Option(
            "--subject", help="A subject name of the config's subjects:, or a model; default the config's."
        ),
    ] = None,
    calls: Annotated[
        int, typer.Option("--calls", help="Probe calls per check, spread evenly over the bins.")
    ] = 64,
    warn_margin: Annotated[
        float, typer.Option("--warn-margin", help="WARN once a drop above this is ruled in.")
    ] = 0.01,
    fail_margin: Annotated[
        float, typer.Option("--fail-margin", help="ALERT once a drop above this is ruled in.")
    ] = 0.02,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            help="Bounds the chance of any false ALERT ever, given the baseline's recorded "
            "outcomes (an endpoint repeating its replies); split over the bins.",
        ),
    ] = 0.05,
    length_histogram: Annotated[
        Path | None,
        typer.Option(
            "--length-histogram",
            help="Production's prompt lengths (OTLP/JSON explicitBounds + bucketCounts): its buckets "
            "with traffic become the length bins.",
        ),
    ] = None,
    max_checks: Annotated[
        int | None, typer.Option("--max-checks", help="With --every: stop after this many checks.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each check's alert body as JSON.")] = False,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Print each check's alert body as Markdown.")
    ] = False,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Server of an openai/NAME model (any compatible API).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = None,
    score: Annotated[str | None, typer.Option("--score", help=SCORE_HELP)] = None,
    otlp_file: Annotated[
        Path | None,
        typer.Option(
            "--otlp-file",
            help="Append each check as OpenTelemetry gen_ai.evaluation.result events (OTLP/JSON lines).",
        ),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option("--otlp-endpoint", help="Also post them to this OTLP/HTTP collector (URL; /v1/logs)."),
    ] = None,
) -> None:
    """Probe the endpoint with the baseline run's items; judge it by an anytime-valid sequential test.

    Each check's probes are compared with the baseline per length bin x position bin and pooled.
    Exit code: 0 OK, 1 ALERT, 3 WARN, 2 bad input. With --every: a status line per check, going
    on after an ALERT; SIGTERM or Ctrl-C ends it (exit 0) after the check in flight, a second one
    at once (the check resumes next time)."""
    from rotscope.monitor.canary.loop import check_loop, loop_settings, run_check
    from rotscope.monitor.canary.probes import prepare_canary, read_length_histogram
    from rotscope.monitor.sequential import STATUS_EXIT, Margins
    from rotscope.monitor.store import MonitorStore

    def setup() -> tuple[Canary, MonitorStore, Margins, float | None]:
        if as_json and as_markdown:
            raise BadInput("--json and --markdown: choose one")
        interval = loop_settings(calls, every, max_checks)
        try:
            margins = Margins(warn=warn_margin, fail=fail_margin, alpha=alpha)
        except ValueError as error:
            raise BadInput(f"--warn-margin/--fail-margin/--alpha: {error}") from None
        if not config.is_file():
            raise BadInput(f"{config}: no such experiment file")
        experiment = _build(config, {}, {"remote": {"base_url": base_url, "api_key_env": api_key_env}})
        if out.is_file() and out.stat().st_size > 0:
            MonitorStore.read(out).close()  # a file that is no monitoring store: refused untouched
        elif not out.parent.is_dir():
            raise BadInput(f"--out: {out.parent}: no such folder")
        histogram = read_length_histogram(length_histogram) if length_histogram is not None else None
        told = _notice if interval is not None else None  # one check: its status line alone
        probe = prepare_canary(
            experiment, baseline, subject, calls, told, histogram=histogram, warn=_warn, score=score
        )
        try:
            opened = MonitorStore.create(out)  # after the plan: bad input leaves no store behind
        except BaseException:
            probe.close()
            raise
        return probe, opened, margins, interval

    if otlp_endpoint is not None:
        from rotscope.monitor.otlp import check_endpoint

        _guarded(lambda: check_endpoint(otlp_endpoint))
    probe, store, margins, interval = _guarded(setup)
    digests = _guarded(lambda: _subject_digests(probe)) if otlp_file or otlp_endpoint else {}

    def emit(body: CanaryAlert) -> None:
        if otlp_file is None and otlp_endpoint is None:
            return
        from rotscope.monitor.otlp import append_file, check_events, logs_request, post

        request = logs_request(check_events(body, digests))
        if otlp_file is not None:
            _guarded(lambda: append_file(otlp_file, request))
        failed = post(otlp_endpoint, request) if otlp_endpoint is not None else None
        if failed is not None:
            _notice(failed)

    def shown(body: CanaryAlert, loop: bool) -> None:
        _show(body, as_json, as_markdown, loop=loop)
        emit(body)

    try:
        if interval is None:
            body = _guarded(lambda: run_check(probe, store, margins))
            shown(body, loop=False)
            raise typer.Exit(STATUS_EXIT[body.status])
        check_loop(
            lambda: _guarded_check(probe, store, margins),
            lambda body: shown(body, loop=True),
            interval,
            max_checks,
            _notice,
        )
    finally:
        probe.close()
        store.close()


def _subject_digests(probe: Canary) -> dict[str, str | None]:
    """The probed model's name and its tokenizer and chat-template digests, as the plan's subject
    group holds them: what an OTLP event names the model by."""
    from rotscope.plan.digests import template_digest

    description = probe.backend.describe()
    tokenizer = description.get("tokenizer_digest") or probe.backend.tokenizer().digest()
    return {
        "model": probe.backend.model_id,
        "tokenizer_digest": str(tokenizer),
        "template_digest": template_digest(probe.backend, description),
    }


def _notice(message: str) -> None:
    errors.print(f"rotscope: {message}", markup=False, highlight=False, soft_wrap=True)


def _guarded_check(probe: Canary, store: MonitorStore, margins: Margins) -> CanaryAlert | None:
    """One check with the command's error handling; None when a second signal abandoned it."""
    from rotscope.monitor.canary.loop import run_check

    try:
        return _guarded(lambda: run_check(probe, store, margins))
    except typer.Exit as failed:
        if failed.exit_code in (130, 143):
            return None
        raise
