"""``monitor show --otlp-file`` (issue 51): the rates as OpenTelemetry GenAI evaluation events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotscope.cli import app
from tests.support.monitor_records import day_record


def test_monitor_show_writes_its_rates_as_otlp_events_a_proto_parser_reads(tmp_path: Path) -> None:
    """Issue 51: ``monitor show --otlp-file``: each dimension value's outcome rates as
    ``gen_ai.evaluation.result`` events in one OTLP/JSON line, read by opentelemetry-proto's parser;
    the score is the rate ``show --json`` gives, and nothing but names and numbers is written."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    source = tmp_path / "day.jsonl"
    source.write_text(
        "".join(json.dumps(day_record(number)) + "\n" for number in range(80)), encoding="utf-8"
    )
    store = tmp_path / "monitor.db"
    assert CliRunner().invoke(app, ["monitor", "ingest", str(store), str(source)]).exit_code == 0
    events = tmp_path / "events.jsonl"
    shown = CliRunner().invoke(app, ["monitor", "show", str(store), "--json", "--otlp-file", str(events)])
    assert shown.exit_code == 0, shown.output
    record = json.loads(shown.stdout)
    (line,) = events.read_text(encoding="utf-8").splitlines()
    request = json_format.Parse(line, ExportLogsServiceRequest())
    records = request.resource_logs[0].scope_logs[0].log_records
    found = {}
    for entry in records:
        attributes = {item.key: item.value for item in entry.attributes}
        key = (
            attributes["rotscope.monitor.dimension"].string_value,
            attributes["rotscope.monitor.value"].string_value,
            attributes["gen_ai.evaluation.name"].string_value,
        )
        found[key] = attributes["gen_ai.evaluation.score.value"].double_value
    expected = {
        (breakdown["dimension"], group["value"], f"rotscope.monitor.{outcome}_rate"): rate["rate"]
        for breakdown in record["breakdowns"]
        for group in breakdown["groups"]
        for outcome, rate in group["rates"].items()
    }
    assert found == pytest.approx(expected) and len(found) == len(records)
    assert {entry.event_name for entry in records} == {"gen_ai.evaluation.result"}
