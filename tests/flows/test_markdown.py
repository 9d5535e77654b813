"""``gate --markdown`` and ``show --markdown``: a short PR comment on a PASS, a FAIL and an
INCONCLUSIVE gate, with the exit codes of the gate unchanged and the record still written."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.report.markdown import _text
from rotscope.stats.intervals import mean_interval
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _experiment(folder: Path) -> Path:
    data: dict[str, Any] = {
        "name": "md",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["beginning", "midpoint", "end"],
        "limit": 16,
        # a haystack per case: the gate clusters on shared ones (issue 48)
        "filler": {
            "kind": "text",
            "glob": str(nonsense_corpus(folder / "corpus", files=16) / "*.txt"),
            "variants": 16,
        },
        "gate": {"min_instances": 5, "margin": 0.3},
    }
    path = folder / "md.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A plan, a baseline, a same-model candidate, a tail-only candidate; and copies of the two
    stored 3-case fixture runs (fewer than their minimum of 10 instances per slice)."""
    folder = tmp_path_factory.mktemp("markdown")
    experiment = _experiment(folder)
    assert invoke("plan", experiment, "-o", folder / "plan.json").exit_code == 0
    made = {"plan": folder / "plan.json"}
    for name, extra in (
        ("baseline", ()),
        ("same", ()),
        ("recent", ("--model", "fake/lexical-recent", "--allow-deviation")),
    ):
        result = invoke("run", experiment, "--plan", folder / "plan.json", "--out", folder / name, *extra)
        assert result.exit_code == 0, result.output
        made[name] = folder / name
    for name in ("v1-lexical", "v1-lexical-recent"):
        shutil.copytree(FIXTURES / name, folder / name)
        made[name] = folder / name
    return made


def _gate(runs: dict[str, Path], baseline: str, candidate: str, *extra: str | Path) -> tuple[int, str]:
    result = invoke(
        "gate", "--baseline", runs[baseline], "--candidate", runs[candidate], "--markdown", *extra
    )
    return result.exit_code, result.stdout


def _section(markdown: str, title: str) -> str:
    return markdown.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_a_pass_is_a_green_comment_with_no_failing_slice(runs: dict[str, Path]) -> None:
    code, markdown = _gate(runs, "baseline", "same", "--plan", runs["plan"])
    assert code == 0
    assert markdown.startswith("## rotscope gate: ✅ PASS (exit 0) on accuracy\n")
    assert "Candidate **same** (fake/lexical) against baseline **baseline** (fake/lexical); plan " in markdown
    assert "### Slices failing or inconclusive: 0 of 4" in markdown
    assert "| slice |" not in markdown
    candidate = _section(markdown, "Candidate's effective length")
    assert "| niah | at least 200 tokens" in candidate
    assert "release record:" not in markdown  # stdout is the comment alone
    assert (runs["same"] / "gate-vs-baseline.json").is_file()


def test_a_fail_lists_the_failing_slices_and_worst_positions(runs: dict[str, Path]) -> None:
    code, markdown = _gate(runs, "baseline", "recent", "--plan", runs["plan"])
    assert code == 1
    assert markdown.startswith("## rotscope gate: ❌ FAIL (exit 1) on accuracy\n")
    slices = _section(markdown, "Slices failing or inconclusive")
    assert "| niah 200 beginning | 16 | 1.00 | 0.00 | -1.00 |" in slices and "| FAIL |" in slices
    # the tail is what the candidate reads: that slice is not shown to fail
    assert "| niah 200 end |" not in slices
    worst = _section(markdown, "Worst positions")
    # which position is worst depends on the case's haystack (one per case here): the range is what holds
    assert re.search(
        r"- niah-01: worst (beginning|midpoint) \(0\.00\), range 1\.00 \(baseline range 0\.00\)", worst
    )
    # The candidate's headline is its own: niah falls at the control length itself.
    assert "| niah | " in _section(markdown, "Candidate's effective length")
    record = json.loads((runs["recent"] / "gate-vs-baseline.json").read_text(encoding="utf-8"))
    assert record["verdict"] == "FAIL"


def test_an_inconclusive_gate_says_why_and_caps_long_lists(runs: dict[str, Path]) -> None:
    code, markdown = _gate(runs, "v1-lexical", "v1-lexical-recent")
    assert code == 3
    assert markdown.startswith("## rotscope gate: ⚠️ INCONCLUSIVE (exit 3) on accuracy\n")
    assert "- niah @ 256 absent: 3 instances, fewer than the plan's minimum 10" in markdown
    assert "no frozen plan." in markdown
    slices = _section(markdown, "Slices failing or inconclusive: 16 of 16")
    assert slices.count("| INCONCLUSIVE |") == 10 and "… and 6 more" in slices
    baseline = _section(markdown, "Baseline's effective length")
    assert "| niah | at least 512 tokens" in baseline
    # The calibration reads the interval (3/3: [0.44, 1.00] overlaps the band), the point beside it.
    assert "overlaps the band at 256 (point saturated)" in baseline
    assert "| nolima | no signal" in baseline


def test_show_markdown_gives_the_headline_and_a_row_per_length(runs: dict[str, Path]) -> None:
    result = invoke("show", runs["v1-lexical-recent"], "--markdown")
    assert result.exit_code == 0
    markdown = result.stdout
    assert markdown.startswith("## rotscope run v1-lexical-recent: fake/lexical-recent\n")
    assert "48/48 items done, 0 errors." in markdown
    assert "no probe is in band at its control length (niah too hard, nolima too hard)" in markdown
    assert "| niah | 256 | 0.33 [" in markdown and "| nolima | 512 | 0.00 [" in markdown
    # each of the 3 cases found at one depth of 3: instance means 1/3, one haystack (runs before variants)
    low, high = mean_interval({case: 1 / 3 for case in "abc"})
    assert (
        f"| niah | 512 | 0.33 [{low:.2f}, {high:.2f}] | 3 | +0.00 (too few pairs) | beginning (range 1.00) |"
        in markdown
    )


def test_json_and_markdown_together_are_bad_input(runs: dict[str, Path]) -> None:
    assert_bad_input(invoke("show", runs["baseline"], "--json", "--markdown"), "--json and --markdown")
    assert_bad_input(
        invoke("gate", "--baseline", runs["baseline"], "--candidate", runs["same"], "--json", "--markdown"),
        "--json and --markdown",
    )


def test_outside_text_cannot_open_markup() -> None:
    assert _text("a|b <script> *x* [l](u)\nnext") == r"a\|b &lt;script&gt; \*x\* \[l\](u) next"


def test_the_ci_example_calls_only_commands_and_options_that_exist() -> None:
    import typer.main

    from rotscope.cli import app

    workflow = yaml.safe_load((EXAMPLES / "ci" / "rotscope-gate.yml").read_text(encoding="utf-8"))
    env = workflow["env"]
    assert (EXAMPLES.parent / env["EXPERIMENT"]).is_file()
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    scripts = [step["run"] for step in workflow["jobs"]["gate"]["steps"] if "run" in step]
    calls = [
        line.split("rotscope ", 1)[1].replace("\\", " ").split()
        for script in scripts
        for line in script.replace("\\\n", " ").splitlines()
        if line.strip().startswith("rotscope ")
    ]
    # one paired session, its gate (its Markdown the comment), the newly failing cases on FAIL
    assert [words[0] for words in calls] == ["run", "gate", "cases"]
    for words in calls:
        command = commands[words[0]]
        known = {option for param in command.params for option in getattr(param, "opts", [])}
        used = {word for word in words if word.startswith("-")}
        assert used <= known, (words[0], used - known)
    assert "--markdown" in calls[1] and "--failing" in calls[2]
    assert scripts[-1] == "exit ${{ steps.gate.outputs.code }}"  # the gate's exit code is the check's
