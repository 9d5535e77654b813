"""The escaping battery (issues 52 and 53): a model and a task named with what a terminal, Markdown or
HTML would act on (an ESC sequence that clears the screen, a window title, CR, BEL, a C1 CSI,
U+202E, U+2028, Markdown pipes and backticks, an HTML ``<script>``) go through every view of a run,
a comparison and a gate, each case one (name, view): no traceback, no raw control character in what is
printed or written, a Markdown table that keeps its column count, no live ``<script>`` and, for
JUnit, an XML document that parses. Every view escapes through ``_util.safe_text`` (one function
for the terminal, one on top of it for Markdown)."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import Result

from tests.support.cli_helpers import invoke
from tests.support.fault_battery import assert_no_traceback, bystander, tree_digest
from tests.support.imported_runs import imported_run

HOSTILE = {
    "esc-clear-screen": "m\x1b[2J\x1b[Hcleared",
    "osc-window-title": "m\x1b]0;owned\x07",
    "carriage-return": "good\rEVIL",
    "bell": "ding\x07dong",
    "c1-csi": "m\x9b31mred",
    "right-to-left-override": "abc\u202egnp.exe",
    "line-separator": "one\u2028two",
    "markdown-pipes": "a|b|c",
    "markdown-backticks": "`rm -rf ~`",
    "html-script": "<script>alert(1)</script>",
}
VIEWS = (
    "compare",
    "compare-markdown",
    "compare-html",
    "compare-junit",
    "show",
    "show-markdown",
    "report",
    "gate",
    "gate-markdown",
)
GATE_EXITS = (0, 1, 3)  # PASS, FAIL, INCONCLUSIVE: a verdict, whichever

HTML_VIEWS = ("compare-html", "report")
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Per hostile name, a run whose model and task carry it and a plain run on the same task."""
    root = tmp_path_factory.mktemp("escaping")
    made: dict[str, tuple[Path, Path]] = {}
    for number, (key, name) in enumerate(HOSTILE.items()):
        task = f"t{name}"
        hostile = imported_run(root / f"{key}-hostile", f"model {name}", task, 0.9, seed=number)
        plain = imported_run(root / f"{key}-plain", "plain/model", task, 0.6, seed=number + 100)
        made[key] = (hostile, plain)
    return made


def _view(view: str, hostile: Path, plain: Path, out: Path) -> tuple[Result, str]:
    """Run ``view`` and return its result and everything it showed (stdout, stderr, the file)."""
    written = out / f"{view}.out"
    args: dict[str, tuple[str | Path, ...]] = {
        "compare": ("compare", hostile, plain),
        "compare-markdown": ("compare", hostile, plain, "--markdown"),
        "compare-html": ("compare", hostile, plain, "-o", written),
        "compare-junit": ("compare", hostile, plain, "--junit", written),
        "show": ("show", hostile),
        "show-markdown": ("show", hostile, "--markdown"),
        "report": ("report", hostile, "-o", written),
        "gate": ("gate", "--baseline", plain, "--candidate", hostile, "-o", written),
        "gate-markdown": ("gate", "--baseline", plain, "--candidate", hostile, "--markdown"),
    }
    result = invoke(*args[view])
    shown = result.output
    if written.exists():
        text = written.read_text(encoding="utf-8")
        # an HTML page inlines plotly.js first: the library's own code is not the run's text
        shown += text.split("</script>", 1)[1] if view in HTML_VIEWS else text
    return result, shown


def _markdown_tables_keep_their_columns(text: str) -> None:
    table: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            counts = {len(UNESCAPED_PIPE.findall(row)) for row in table}
            assert len(counts) == 1, table
            table = []


@pytest.mark.fault_battery
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("key", list(HOSTILE))
def test_a_hostile_name_is_escaped_in_every_view(
    runs: dict[str, tuple[Path, Path]], key: str, view: str, tmp_path: Path
) -> None:
    hostile, plain = runs[key]
    outside = bystander(tmp_path / "bystander")
    before = tree_digest(outside)
    result, shown = _view(view, hostile, plain, tmp_path)
    assert_no_traceback(result, allowed=GATE_EXITS if view.startswith("gate") else (0,))
    assert not RAW_CONTROL.search(shown), (view, RAW_CONTROL.search(shown))
    if view not in ("compare", "show", "gate"):  # a page or a document: no live script from a name
        assert "<script>alert(1)" not in shown  # escaped (&lt;script&gt;) in HTML and Markdown alike
    if view.endswith("markdown"):
        _markdown_tables_keep_their_columns(result.stdout)
        assert "`rm -rf ~`" not in shown  # no code span opened by a name
    if view == "compare-junit":
        ElementTree.fromstring((tmp_path / f"{view}.out").read_text(encoding="utf-8"))
    assert tree_digest(outside) == before
