"""rotscope compare on a --models session of three scripted models (fake/lexical, fake/lexical-recent,
fake/curve-600) at 16 instances per length: the leaderboard's order, the pairwise verdicts against
the scripted truth (``backends.curve``), the JSON against its generated schema, the Markdown table,
the CSV rows, the offline HTML's one trace per model, the figure files, and two runs of different
configs refused naming the first differing field."""

from __future__ import annotations

import csv
import io
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from rotscope.backends.curve import LogisticCurve
from rotscope.compare.record import Comparison, ComparisonRow
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

MODELS = ["fake/lexical", "fake/lexical-recent", "fake/curve-600"]
LENGTHS = [200, 800, 1600]
CURVE = LogisticCurve(600.0)  # what fake/curve-600 answers by (backends/fake.py)


def _config(root: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {
        "name": "cmp",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": LENGTHS,
        "depths": ["beginning", "end"],
        "limit": 16,
        "controls": False,
        # one haystack per case: 16 clusters, so the sign-flip test can decide (3 shared variants
        # are 3 clusters, whose smallest two-sided p is 0.25: docs/statistics.md, "Paired tests
        # (compare)")
        "filler": {
            "kind": "text",
            "glob": str(nonsense_corpus(root / "corpus", files=16, lines=120) / "*.txt"),
            "variants": 16,
        },
        **changes,
    }
    path = root / f"cmp-{len(changes)}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    result = invoke("run", _config(root), "--models", ",".join(MODELS), "--out", root / "session")
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture(scope="module")
def comparison(session: Path) -> dict[str, Any]:
    result = invoke("compare", session / "session", "--json")
    assert result.exit_code == 0, result.output
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_leaderboard_puts_lexical_first_and_curve_last(comparison: dict[str, Any]) -> None:
    board = [entry for entry in comparison["leaderboard"] if entry["task"] == "niah"]
    assert board[0]["model"] == "fake/lexical"
    assert board[-1]["model"] == "fake/curve-600"
    assert [entry["rank"] for entry in board] == [1, 2, 3]
    assert all(len(entry["lengths"]) == len(LENGTHS) for entry in board)
    assert all(line["instances"] >= 16 for entry in board for line in entry["lengths"])
    recent = next(entry for entry in board if entry["model"] == "fake/lexical-recent")
    assert recent["worst_position"]["position"] == "beginning"  # it reads only the last half


def test_the_pairwise_verdicts_match_the_scripted_truth(comparison: dict[str, Any]) -> None:
    wanted = {"fake/lexical", "fake/curve-600"}
    pair = next(p for p in comparison["pairs"] if {p["first"], p["second"]} == wanted)
    assert pair["first"] == "fake/lexical"  # in the order given: differences are curve minus lexical
    by_length = {entry["length"]: entry for entry in pair["lengths"]}
    below = [length for length in LENGTHS if CURVE.score(length) < 0.8]
    assert below == [800, 1600]  # the truth the assertions below rest on
    for length in below:
        assert by_length[length]["verdict"] == "worse", json.dumps(by_length[length])
    both_perfect = [
        length
        for length, entry in by_length.items()
        if entry["first_accuracy"] == 1.0 and entry["second_accuracy"] == 1.0
    ]
    assert both_perfect, by_length  # at 200 the curve's 0.98 answers every one of these items
    for length in both_perfect:
        assert by_length[length]["verdict"] == "no difference shown"
    assert "fake/lexical better than fake/curve-600 at 800 and 1,600" in pair["sentence"]
    assert "no difference shown at 200" in pair["sentence"]
    # Holm across all 3 pairs x 3 lengths: each adjusted p at least its own
    assert all(entry["p_holm"] >= entry["p_value"] for entry in pair["lengths"])
    assert comparison["family"] == "niah: Holm over 9 tests: 3 pairs x 3 lengths"
    assert all(entry["test"].startswith("sign-flip on 16 clusters") for entry in pair["lengths"])


def test_the_json_and_its_rows_follow_their_schemas(comparison: dict[str, Any]) -> None:
    schemas = resources.files("rotscope").joinpath("schemas")
    schema = json.loads(schemas.joinpath("comparison.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(comparison, schema, cls=jsonschema.Draft202012Validator)
    row_schema = json.loads(schemas.joinpath("comparison_row.schema.json").read_text(encoding="utf-8"))
    for row in comparison["rows"]:
        jsonschema.validate(row, row_schema, cls=jsonschema.Draft202012Validator)
    assert len(comparison["rows"]) == len(MODELS) * len(LENGTHS)  # one per model x task x length
    # printed from the model: every key in the record's order, ``positions`` null (no run imported)
    assert list(comparison) == list(Comparison.model_fields) and comparison["positions"] is None
    assert all(list(row) == list(ComparisonRow.model_fields) for row in comparison["rows"])
    broken = {**comparison, "alpha": 2}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_markdown_is_a_table_and_csv_the_rows(session: Path, comparison: dict[str, Any]) -> None:
    markdown = invoke("compare", session / "session", "--markdown")
    assert markdown.exit_code == 0, markdown.output
    table = [line for line in markdown.stdout.splitlines() if line.startswith("|")]
    assert re.fullmatch(r"\|(---\|)+", table[1])
    width = table[0].count("|")
    assert len(table) == 2 + len(MODELS) and all(line.count("|") == width for line in table)
    assert "fake/lexical" in table[2]
    rows = invoke("compare", session / "session", "--csv")
    assert rows.exit_code == 0, rows.output
    read = list(csv.DictReader(io.StringIO(rows.stdout)))
    assert [(r["model"], int(r["length"])) for r in read] == [
        (r["model"], r["length"]) for r in comparison["rows"]
    ]


def test_the_html_has_one_overlaid_trace_per_model_and_the_figures_are_files(session: Path) -> None:
    page, folder = session / "cmp.html", session / "figures"
    result = invoke("compare", session / "session", "-o", page, "--figures", folder)
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert "<script src=" not in html  # plotly inlined: opens offline
    figures = []
    for match in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", html):
        traces, end = json.JSONDecoder().raw_decode(html, match.end())
        layout, _ = json.JSONDecoder().raw_decode(html, end + html[end:].index("{"))
        figures.append((layout["title"]["text"], traces))
    overlay = [traces for title, traces in figures if "every model's accuracy vs length" in title]
    assert len(overlay) == 1
    assert [trace["name"] for trace in overlay[0]] == MODELS  # leaderboard order
    heatmaps = [traces for title, traces in figures if "side by side" in title]
    assert len(heatmaps) == 1 and len(heatmaps[0]) == len(MODELS)
    names = sorted(path.name for path in folder.iterdir())
    kinds = ("length", "heatmaps")
    assert names == sorted(f"niah-compare-{kind}.{ext}" for kind in kinds for ext in ("svg", "png"))
    assert all((folder / name).stat().st_size > 0 for name in names)


def test_runs_of_different_configs_are_refused_naming_the_first_field(session: Path) -> None:
    other = session / "other"
    config = _config(session, lengths=[200], limit=2)
    result = invoke("run", config, "--model", "fake/lexical", "--out", other)
    assert result.exit_code == 0, result.output
    line = assert_bad_input(invoke("compare", session / "session" / "fake-lexical", other), "grid.lengths")
    assert "not comparable" in line and "limit" not in line  # the first field, not every field


def test_the_terminal_shows_the_leaderboard_and_the_verdicts(session: Path) -> None:
    result = invoke("compare", session / "session")
    assert result.exit_code == 0, result.output
    assert "niah: leaderboard" in result.stdout
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert any(line.startswith("fake/lexical better than fake/curve-600 at 800 and 1,600") for line in lines)


def test_bad_arguments_are_one_line(session: Path) -> None:
    assert_bad_input(invoke("compare", session / "session" / "fake-lexical"), "two or more")
    assert_bad_input(invoke("compare", session / "nowhere", session / "session"), "not a run folder")
    assert_bad_input(invoke("compare", session / "session", "--json", "--csv"), "choose one")


def test_one_model_against_itself_shows_no_difference_under_folder_names(session: Path) -> None:
    again = session / "again"
    result = invoke("run", _config(session), "--model", "fake/lexical", "--out", again)
    assert result.exit_code == 0, result.output
    result = invoke("compare", session / "session" / "fake-lexical", again, "--json")
    assert result.exit_code == 0, result.output
    (pair,) = json.loads(result.stdout)["pairs"]
    assert (pair["first"], pair["second"]) == ("fake-lexical", "again")  # one model: named by folder
    assert [entry["verdict"] for entry in pair["lengths"]] == ["no difference shown"] * len(LENGTHS)
    assert all(entry["difference"] == 0.0 for entry in pair["lengths"])


def test_junit_names_each_pair_and_length_and_fails_where_a_model_is_worse(
    session: Path, tmp_path: Path
) -> None:
    from xml.etree import ElementTree

    target = tmp_path / "compare.xml"
    result = invoke("compare", session / "session", "--json", "--junit", target)
    assert result.exit_code == 0, result.output
    verdicts = json.loads(result.stdout)["pairs"]
    root = ElementTree.parse(target).getroot()
    cases = [case for suite in root.iter("testsuite") for case in suite.iter("testcase")]
    assert len(cases) == sum(len(pair["lengths"]) for pair in verdicts)
    worse = sum(1 for pair in verdicts for length in pair["lengths"] if length["verdict"] == "worse")
    assert worse > 0  # the scripted models differ: curve-600 is worse than lexical past 600 tokens
    assert sum(int(suite.get("failures", "0")) for suite in root.iter("testsuite")) == worse
    assert sum(1 for case in cases if case.find("failure") is not None) == worse
