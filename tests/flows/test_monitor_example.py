"""examples/monitor end to end: the scripted endpoint's window shrinks after check 5, the canary
ALERTs within 3 checks after it at the long prompts' early bin (1600/0.00-0.33) and no other
length × position bin; the generated outcomes ingest into the same store and their long, early
requests answer less."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import invoke

EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor"


def _load(name: str) -> object:
    spec = importlib.util.spec_from_file_location(f"monitor_example_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_canary_catches_the_shrinking_window_at_the_right_bins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load("production")  # registers production/lexical in this process
    experiment = EXAMPLE / "experiment.yaml"
    baseline = invoke("run", experiment, "--out", tmp_path / "base")
    assert baseline.exit_code == 0, baseline.output
    monkeypatch.setenv("ROTSCOPE_EXAMPLE_SHRINK_AFTER", "300")  # after check 5 (60 calls each)
    store = tmp_path / "store.db"
    args = ["--baseline", tmp_path / "base", "--out", store, "--every", "0.01s", "--max-checks", "9"]
    result = invoke("canary", experiment, *args, "--json")
    assert result.exit_code == 0, result.output
    bodies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [body["check"] for body in bodies] == list(range(1, 10))
    assert all(body["probes_this_check"] == 60 for body in bodies)
    assert [body["status"] for body in bodies[:5]] == ["OK"] * 5
    first = next(body for body in bodies if body["status"] == "ALERT")
    assert 6 <= first["check"] <= 8  # within 3 checks of the shrink
    assert all(body["status"] == "ALERT" for body in bodies if body["check"] >= first["check"])
    assert set(bodies[-1]["responsible"]) - {"pooled"} == {"1600/0.00-0.33"}
    by_bin = {entry["bin"]: entry for entry in bodies[-1]["bins"]}
    assert by_bin["1600/0.00-0.33"]["canary"] < by_bin["1600/0.00-0.33"]["baseline"] - 0.3
    assert all(by_bin[name]["canary"] == 1.0 for name in by_bin if name not in ("1600/0.00-0.33", "pooled"))

    outcomes = _load("make_outcomes")
    file = tmp_path / "outcomes.jsonl"
    made = outcomes.records(12, 6)  # type: ignore[attr-defined]  (the README's 36 h, shorter)
    file.write_text("".join(json.dumps(record) + "\n" for record in made), encoding="utf-8")
    ingested = invoke("monitor", "ingest", store, file)
    assert ingested.exit_code == 0, ingested.output
    shown = invoke("monitor", "show", store, "--json")
    assert shown.exit_code == 0, shown.output
    rates = json.loads(shown.stdout)
    assert rates["records"] == len(made)
    position = next(b for b in rates["breakdowns"] if b["dimension"] == "position")["groups"]
    answered = [group["rates"]["answered"]["rate"] for group in position]
    assert answered[0] < answered[-1] - 0.05  # the trimmed head answers less
    window = invoke(
        "monitor", "show", store, "--baseline-window", "2026-01-05T00:00Z..2026-01-05T06:00Z", "--json"
    )
    assert window.exit_code == 0, window.output
    compared = json.loads(window.stdout)["baseline_window"]
    assert compared["status"] == "ALERT" and "[2048, 4096)/0.00-0.33" in compared["responsible"]
    assert not [name for name in compared["responsible"] if name.startswith(("[128,", "[256,", "[512,"))]

    report = invoke(
        "monitor", "report", store, "--markdown", "--baseline-window", "2026-01-05T00:00Z..2026-01-05T06:00Z"
    )
    assert report.exit_code == 0, report.output
    alerts = report.stdout.split("### Alerts")[1].split("###")[0]
    assert alerts.count("| ALERT | 1600/0.00-0.33, pooled |") == 9 - first["check"] + 1
    assert "they agree on all 6 bins both watch" in report.stdout  # both ALERT at the long head
