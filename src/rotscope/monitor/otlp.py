"""The canary's checks and the monitor's rates as OpenTelemetry GenAI evaluation events
(``gen_ai.evaluation.result``), in OTLP/JSON (the ``ExportLogsServiceRequest`` of
opentelemetry-proto's ``logs_service.proto`` in its JSON form): appended as one line per check (or
per ``monitor show``) to a file (``--otlp-file``, the layout of the collector's file exporter), or
posted to an OTLP/HTTP endpoint's ``/v1/logs`` (``--otlp-endpoint``).

Content-free by construction: an event carries the evaluation's name, its score (a probability or
an accuracy), its label (``ok``, ``warn``, ``alert``), the bin, the check's number and the subject's
model name with its tokenizer and chat-template digests; never a prompt, a reply or a label the
store did not make (docs/monitor.md, "OpenTelemetry events")."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rotscope._util.urls import url_problem
from rotscope._version import __version__
from rotscope.errors import BadInput
from rotscope.monitor.canary.record import CanaryAlert
from rotscope.monitor.record import MonitorRates

EVENT_NAME = "gen_ai.evaluation.result"
SEVERITY = {"OK": (9, "INFO"), "WARN": (13, "WARN"), "ALERT": (17, "ERROR")}
"""OpenTelemetry's severity numbers and texts for a check's statuses."""
Attribute = str | int | float | bool


def _value(value: Attribute) -> dict[str, Any]:
    """An ``AnyValue`` in OTLP/JSON (64-bit integers as decimal strings, as the JSON mapping says)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


def _attributes(values: Mapping[str, Attribute | None]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items() if value is not None]


def check_events(
    alert: CanaryAlert, subject: Mapping[str, str | None], time_ns: int | None = None
) -> list[dict[str, Any]]:
    """One ``gen_ai.evaluation.result`` log record per bin of ``alert`` (``pooled`` included): the
    canary's mean score there as the score, the bin's status as the label."""
    at = str(time_ns if time_ns is not None else time.time_ns())
    records = []
    for entry in alert.bins:
        number, text = SEVERITY[entry.status]
        records.append(
            {
                "timeUnixNano": at,
                "observedTimeUnixNano": at,
                "severityNumber": number,
                "severityText": text,
                "eventName": EVENT_NAME,
                "attributes": _attributes(
                    {
                        "gen_ai.evaluation.name": f"rotscope.canary.{alert.score}",
                        "gen_ai.evaluation.score.value": entry.canary,
                        "gen_ai.evaluation.score.label": entry.status.lower(),
                        "gen_ai.request.model": subject.get("model"),
                        "rotscope.tokenizer_digest": subject.get("tokenizer_digest"),
                        "rotscope.template_digest": subject.get("template_digest"),
                        "rotscope.canary.check": alert.check,
                        "rotscope.canary.bin": entry.bin,
                        "rotscope.canary.probes": entry.probes,
                        "rotscope.canary.baseline_score": entry.baseline,
                        "rotscope.canary.drop_lower": entry.drop_lower,
                    }
                ),
            }
        )
    return records


def rate_events(record: MonitorRates, time_ns: int | None = None) -> list[dict[str, Any]]:
    """One ``gen_ai.evaluation.result`` per dimension value and outcome of ``monitor show`` (its
    rate the score, its interval and counts as attributes), and, with a baseline window, one per
    bin of the window's test (the answered rate the score, the bin's status the label)."""
    at = str(time_ns if time_ns is not None else time.time_ns())
    found = []
    for breakdown in record.breakdowns:
        for group in breakdown.groups:
            for outcome, rate in group.rates.items():
                attributes: dict[str, Attribute | None] = {
                    "gen_ai.evaluation.name": f"rotscope.monitor.{outcome}_rate",
                    "gen_ai.evaluation.score.value": rate.rate,
                    "rotscope.monitor.dimension": breakdown.dimension,
                    "rotscope.monitor.value": group.value,
                    "rotscope.monitor.records": group.rated,
                    "rotscope.monitor.low": rate.low,
                    "rotscope.monitor.high": rate.high,
                }
                found.append(_record(at, "OK", attributes))
    window = record.baseline_window
    for entry in window.bins if window is not None else ():
        attributes = {
            "gen_ai.evaluation.name": "rotscope.monitor.answered_vs_window",
            "gen_ai.evaluation.score.value": entry.answered,
            "gen_ai.evaluation.score.label": entry.status.lower(),
            "rotscope.monitor.bin": entry.bin,
            "rotscope.monitor.records": entry.records,
            "rotscope.monitor.reference": entry.reference,
            "rotscope.monitor.drop_lower": entry.drop_lower,
        }
        found.append(_record(at, entry.status, attributes))
    return found


def _record(at: str, status: str, attributes: Mapping[str, Attribute | None]) -> dict[str, Any]:
    number, text = SEVERITY[status]
    return {
        "timeUnixNano": at,
        "observedTimeUnixNano": at,
        "severityNumber": number,
        "severityText": text,
        "eventName": EVENT_NAME,
        "attributes": _attributes(attributes),
    }


def logs_request(records: Sequence[Mapping[str, Any]], scope: str = "rotscope.canary") -> dict[str, Any]:
    """The ``ExportLogsServiceRequest`` holding ``records`` under rotscope's resource and ``scope``."""
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": _attributes({"service.name": "rotscope"})},
                "scopeLogs": [
                    {"scope": {"name": scope, "version": __version__}, "logRecords": list(records)}
                ],
            }
        ]
    }


def append_file(path: Path, request: Mapping[str, Any]) -> None:
    """One request as one JSON line at the end of ``path`` (a refused path is bad input)."""
    try:
        with path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(request, allow_nan=False, separators=(",", ":")) + "\n")
    except OSError as error:
        raise BadInput(f"--otlp-file: cannot write {path}: {error.strerror or error}") from None


def check_endpoint(endpoint: str) -> None:
    """The collector's address by the one URL rule of every server address (``_util.urls``)."""
    problem = url_problem(endpoint)
    if problem is not None:
        raise BadInput(f"--otlp-endpoint: {problem}")


def post(endpoint: str, request: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """POST the request to ``endpoint`` (its ``/v1/logs`` added where missing); the failure in one
    line, or None: a collector that is down never stops the canary."""
    import httpx

    url = endpoint.rstrip("/")
    url = url if url.endswith("/v1/logs") else url + "/v1/logs"
    try:
        reply = httpx.post(url, content=json.dumps(request, allow_nan=False), timeout=timeout_s,
                           headers={"Content-Type": "application/json"})  # fmt: skip
    except httpx.HTTPError as error:
        return f"--otlp-endpoint: {type(error).__name__} from {url}"
    if reply.status_code >= 300:
        return f"--otlp-endpoint: {url} answered HTTP {reply.status_code}"
    return None
