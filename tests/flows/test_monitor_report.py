"""rotscope monitor report on a store a real canary and a real ingest wrote: ``fake/curve-600``
against its ``fake/lexical`` baseline ALERTs at the long bins (1600/...), while the ingested
outcomes of those lengths do not change and those of short, early prompts fall: the HTML parses,
has one trace per ingest bin and per canary bin, names the ALERTed bins in its alert table and
puts both disagreements side by side; Markdown has the same tables; a store of only outcomes
reports them; a file that is no monitoring store is one line, exit 2."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

LONG_EARLY = "1600/0.00-0.33"


def _records(
    start: datetime, count: int, length: int, quantile: float, answered_every: int, conversation: int = 0
) -> list[str]:
    """``count`` records a minute apart; every ``answered_every``-th one not answered (0: all are);
    with ``conversation``, consecutive ones in conversations of that many (a hashed ``cluster_id``)."""
    out = []
    for i in range(count):
        missed = answered_every and i % answered_every == 0
        outcome = "abstained" if missed else "answered"
        ts = (start + timedelta(minutes=i)).isoformat()
        record = {"ts": ts, "length_tokens": length, "evidence_quantile": quantile, "outcome": outcome}
        if conversation:
            name = f"{start.isoformat()}/{length}/{i // conversation}"
            record["cluster_id"] = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        out.append(json.dumps(record))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Outcomes from 3 h before the canary to 1 h after its start, then two canary checks."""
    root = tmp_path_factory.mktemp("monitor_report")
    data: dict[str, Any] = {
        "name": "exp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200, 400, 1600],
        "depths": ["beginning", "end"],
        "limit": 4,
        "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
    }
    (root / "exp.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    result = invoke("run", root / "exp.yaml", "--out", root / "base")
    assert result.exit_code == 0, result.output
    path = root / "store.db"
    now = datetime.now(UTC).replace(microsecond=0)
    before, since = now - timedelta(hours=3), now + timedelta(minutes=5)
    lines = [
        # conversations of 3 requests: the ingest's test takes one value per conversation
        *_records(before, 150, 1500, 0.1, 0, 3),  # [1024, 2048)/0.00-0.33: unchanged, all answered
        *_records(since, 150, 1500, 0.1, 0, 3),
        *_records(before, 150, 200, 0.1, 0, 3),  # [128, 256)/0.00-0.33: falls to half answered
        *_records(since, 150, 200, 0.1, 2, 3),
    ]
    claim = {
        "ts": since.isoformat(),
        "length_tokens": 200,
        "evidence_quantile": 0.9,
        "outcome": "forbidden_claim",
    }
    lines.append(json.dumps(claim))
    (root / "outcomes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke("monitor", "ingest", path, root / "outcomes.jsonl")
    assert result.exit_code == 0, result.output
    args = ["--baseline", root / "base", "--out", path, "--subject", "fake/curve-600"]
    result = invoke("canary", root / "exp.yaml", *args, "--every", "0.01s", "--max-checks", "2")
    assert result.exit_code == 0, result.output
    assert "ALERT" in result.stdout.splitlines()[-1]
    return path


class _Page(HTMLParser):
    """The tables of a page (by class: rows of cells) and its plotly figures' traces."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.scripts: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = dict(attrs).get("class") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "script":
            self._script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table is not None and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "script":
            self._script = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._script:
            self.scripts[-1] += data

    def figures(self) -> list[list[dict[str, Any]]]:
        """Each ``Plotly.newPlot`` call's list of traces."""
        decoder = json.JSONDecoder()
        out = []
        for script in self.scripts:
            at = script.find("Plotly.newPlot(")
            if at < 0 or len(script) > 1_000_000:  # plotly's own library is the huge one
                continue
            rest = script[at + len("Plotly.newPlot(") :].lstrip()
            _, end = decoder.raw_decode(rest)  # the div's id
            traces, _ = decoder.raw_decode(rest[end:].lstrip(" ,\n"))
            out.append(traces)
        return out


@pytest.fixture(scope="module")
def page(store: Path) -> _Page:
    output = store.parent / "report.html"
    result = invoke("monitor", "report", store, "-o", output)
    assert result.exit_code == 0, result.output
    parsed = _Page()
    parsed.feed(output.read_text(encoding="utf-8"))
    return parsed


def test_the_html_has_a_trace_per_ingest_bin_and_per_canary_bin(store: Path, page: _Page) -> None:
    rates, checks = page.figures()
    assert sorted(trace["name"] for trace in rates) == ["[1024, 2048)/0.00-0.33", "[128, 256)/0.00-0.33"]
    assert all(trace["error_y"]["array"] for trace in rates)
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        bins = {name for (name,) in db.execute("SELECT DISTINCT bin FROM canary_probes")}
    assert sorted(trace["name"] for trace in checks) == sorted([*bins, "pooled"])
    assert all(len(trace["x"]) == 2 for trace in checks)  # both checks
    assert "plotly" in page.scripts[0].lower() and len(page.scripts[0]) > 1_000_000  # inlined: offline


def test_the_alert_table_names_the_alerted_bins_and_claims_stand_apart(page: _Page) -> None:
    header, *alerts = page.tables["alerts"]
    assert header == ["check", "at", "status", "bins responsible"]
    assert alerts[-1][0] == "2" and alerts[-1][2] == "ALERT" and LONG_EARLY in alerts[-1][3]
    assert not [row for row in alerts if "200/" in row[3]]
    assert page.tables["forbidden"][1:] == [["[128, 256)/0.67-1.00", page.tables["forbidden"][1][1], "1"]]


def test_canary_and_ingest_disagreeing_are_side_by_side(page: _Page) -> None:
    header, *rows = page.tables["disagreement"]
    by_bin = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    long = by_bin[LONG_EARLY]  # the canary ALERTs, the ingest of those lengths is unchanged
    assert long["canary"] == "ALERT" and long["ingest bin"] == "[1024, 2048)/0.00-0.33"
    assert long["ingest"] == "OK" and long["answered since"] == "1.000"
    short = by_bin["200/0.00-0.33"]  # the ingest ALERTs, the canary's probes there are fine
    assert short["canary"] != "ALERT" and short["ingest"] == "ALERT"
    assert float(short["answered since"]) == pytest.approx(0.5, abs=0.01)


def test_markdown_has_the_tables(store: Path) -> None:
    result = invoke("monitor", "report", store, "--markdown")
    assert result.exit_code == 0, result.output
    text = result.stdout
    to_file = invoke("monitor", "report", store, "-o", store.parent / "report.md")
    assert to_file.exit_code == 0, to_file.output
    assert (store.parent / "report.md").read_text().startswith(text.splitlines()[0])  # Markdown, not HTML
    for heading in (
        "## Ingested outcomes",
        "### Forbidden claims",
        "### Alerts",
        "### Where canary and ingest disagree",
    ):
        assert heading in text
    assert "| bin | hour | rated | answered | 95% interval |" in text
    assert f"| {LONG_EARLY} | ALERT |" in text
    assert "| \\[128, 256)/0.00-0.33 | " in text  # Markdown's brackets escaped (_util.safe_text)
    later = invoke("monitor", "report", store, "--markdown", "--baseline-window", "2020-01-01..2099-01-01")
    assert later.exit_code == 0, later.output
    assert (
        "no ingested record since, nothing to compare" in later.stdout
        and "| canary bin |" not in later.stdout
    )


def test_a_store_of_outcomes_only_reports_them(tmp_path: Path) -> None:
    file = tmp_path / "outcomes.jsonl"
    file.write_text("\n".join(_records(datetime(2026, 1, 1, tzinfo=UTC), 4 * 24 * 60, 300, 0.5, 3)) + "\n")
    assert invoke("monitor", "ingest", tmp_path / "s.db", file).exit_code == 0
    result = invoke("monitor", "report", tmp_path / "s.db", "--markdown", "-o", tmp_path / "r.md")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "No canary checks in this store." in text and "| bin | day |" in text  # 4 days: by day
    assert text.count("| \\[256, 512)/0.33-0.67 | 2026-01-0") == 4


def test_a_file_that_is_no_store_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.db").write_text("not sqlite at all", encoding="utf-8")
    assert_bad_input(invoke("monitor", "report", tmp_path / "x.db", "-o", tmp_path / "r.html"), "x.db")
    assert not (tmp_path / "r.html").exists()
    assert_bad_input(invoke("monitor", "report", tmp_path / "x.db"), "-o")


def test_a_stored_check_body_that_is_no_canary_record_is_one_line(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE canary_checks SET body = '{\"check\": 1}' WHERE number = 1")
    assert_bad_input(invoke("monitor", "report", copy, "--markdown"), "canary check 1", "no canary record")
