"""The figures of a run as files (``report --figures``): drawn with matplotlib, no browser and no
kaleido; SVG, PNG and PDF, each valid and listed only once written; titled with model, task and
effective length, lines that differ without colour, a grayscale-safe heatmap; a model name holding
control characters still gives well-formed SVG; a missing matplotlib is one line naming the extra."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend, responder_for
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.records.summary import Summary
from rotscope.report import figure_files
from rotscope.report.names import shareable
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

# the fake reads likelihoods: its run keeps both scores, drawn together in TASK-scores
STEMS = [
    f"{task}-{kind}" for task in ("niah", "nolima") for kind in ("heatmap", "length", "position", "scores")
]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EVIL = "lexical-recent\x1b[31m\x07"
# The CLI with kaleido made unimportable: any use of it would fail the run.
NO_KALEIDO = "import sys; sys.modules['kaleido'] = None; from rotscope.cli import main; main()"
NO_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; from rotscope.cli import main; main()"


def _config(root: Path, tasks: list[str]) -> Any:
    return build_config(
        {
            "model": "fake/lexical-recent",
            "tasks": tasks,
            "lengths": [200, 400, 800],
            "depths": [0.0, 0.5, 1.0],
            "limit": 3,
            "controls": False,
            "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
        }
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("figures")
    return run_experiment(_config(root, ["niah", "nolima"]), run_dir=root / "run")


@pytest.fixture(scope="module")
def evil_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose model name holds ESC and BEL (a fake model reporting itself so)."""
    root = tmp_path_factory.mktemp("evil-figures")
    backend = FakeBackend(EVIL, responder_for("lexical-recent"))
    return run_experiment(_config(root, ["niah"]), run_dir=root / "run", backend=backend)


def _cli(script: str, *args: str | Path, path: Path) -> subprocess.CompletedProcess[str]:
    """rotscope in a fresh interpreter, ``PATH`` only ``path`` (no browser to find)."""
    env = {**os.environ, "PATH": str(path), "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _listed(output: str) -> list[Path]:
    return [
        Path(line.removeprefix("figure: ")) for line in output.splitlines() if line.startswith("figure: ")
    ]


def _assert_valid(path: Path) -> None:
    data = path.read_bytes()
    if path.suffix == ".svg":
        root = ElementTree.fromstring(data)  # well-formed XML, or ParseError
        assert root.tag.endswith("svg"), root.tag
    elif path.suffix == ".png":
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000, (path, len(data))
    else:
        assert path.suffix == ".pdf" and data.startswith(b"%PDF-"), path
        assert data.rstrip().endswith(b"%%EOF"), path


@pytest.fixture(scope="module")
def cli_drawn(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """``report --figures`` of ``run_dir`` in a fresh interpreter without kaleido, ``PATH`` holding
    no browser: the report, the figures folder and the standard output (drawn once, read by two
    tests)."""
    root = tmp_path_factory.mktemp("cli-figures")
    bare = root / "bin"  # PATH holds no chromium, chromium-browser or chrome
    bare.mkdir()
    figs = root / "figs"
    result = _cli(NO_KALEIDO, "report", run_dir, "-o", root / "r.html", "--figures", figs, path=bare)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return root / "r.html", figs, result.stdout


def test_figures_are_written_without_a_browser_or_kaleido_as_valid_svg_png_and_pdf(
    cli_drawn: tuple[Path, Path, str],
) -> None:
    report, figs, stdout = cli_drawn
    expected = sorted(f"{stem}.{kind}" for stem in STEMS for kind in ("svg", "png", "pdf"))
    listed = _listed(stdout)
    assert sorted(path.name for path in listed) == expected
    assert sorted(path.name for path in figs.iterdir()) == expected
    for path in listed:
        _assert_valid(path)
    svg = (figs / "niah-length.svg").read_text(encoding="utf-8")
    assert "fake/lexical-recent · niah: accuracy vs length" in svg and "effective length" in svg
    assert report.stat().st_size > 100_000  # the report still written, plotly inline


def test_a_model_name_with_escape_and_bell_gives_well_formed_svg_and_lists_only_written_files(
    evil_run_dir: Path, tmp_path: Path
) -> None:
    figs = tmp_path / "figs"
    result = invoke("report", evil_run_dir, "-o", tmp_path / "r.html", "--figures", figs)
    assert result.exit_code == 0, result.output
    listed = _listed(result.stdout)
    assert len(listed) == 12 and sorted(listed) == sorted(figs.iterdir())  # 4 figures x 3 formats
    for path in listed:
        assert path.stat().st_size > 0
        _assert_valid(path)
    for path in figs.glob("*.svg"):
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text
        assert r"fake/lexical-recent\x1b[31m\x07 · niah" in text  # drawn as its escapes


def test_the_same_run_draws_the_same_files(
    run_dir: Path, cli_drawn: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """Drawn again in this process, the run gives the bytes the command line drew in its own."""
    again = figure_files.write_figures(load_summary(run_dir), tmp_path / "again")
    _, figs, _ = cli_drawn
    assert sorted(path.name for path in again) == sorted(path.name for path in figs.iterdir())
    assert len(again) == 24
    for path in again:
        assert path.read_bytes() == (figs / path.name).read_bytes(), path.name


def test_each_task_has_three_figures_titled_with_model_task_and_effective_length(run_dir: Path) -> None:
    drawn = figure_files.run_figures(shareable(load_summary(run_dir)))
    assert sorted(drawn) == STEMS
    for stem, figure in drawn.items():
        title = figure.get_suptitle()
        assert title.startswith(f"fake/lexical-recent · {stem.split('-')[0]}: "), title
        assert figure.axes[0].get_title(loc="left").startswith("effective length "), stem
    assert drawn["nolima-length"].axes[0].get_title(loc="left") == "effective length no signal (nolima-0.85)"
    # both scores on one figure: accuracy and the answer probability, each with its own line style
    lines = drawn["niah-scores"].axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["accuracy", "answer probability"]
    assert lines[0].get_linestyle() != lines[1].get_linestyle()


def test_lines_differ_without_colour_and_the_heatmap_is_grayscale_safe(run_dir: Path) -> None:
    drawn = figure_files.run_figures(shareable(load_summary(run_dir)))
    lines = [container.lines[0] for container in drawn["niah-position"].axes[0].containers]
    assert len(lines) == 3
    assert len({str(line.get_linestyle()) for line in lines}) == 3
    assert len({line.get_marker() for line in lines}) == 3
    image = drawn["niah-heatmap"].axes[0].images[0]
    assert image.get_cmap().name == "cividis" and (image.norm.vmin, image.norm.vmax) == (0, 1)
    # Every cell prints its value, so the grid reads without its colours.
    texts = [text.get_text() for text in drawn["niah-heatmap"].axes[0].texts]
    assert len(texts) == 9 and all(text.startswith(("0.", "1.")) and "n=3" in text for text in texts)


def test_a_task_whose_rows_are_all_errors_is_drawn_saying_so(tmp_path: Path) -> None:
    def fails(request: object) -> str:
        raise RuntimeError("prompt truncated")

    config = _config(tmp_path, ["niah"])
    run = run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("fails", fails))
    written = figure_files.write_figures(load_summary(run), tmp_path / "figs")
    assert len(written) == 9
    for path in written:
        _assert_valid(path)
    drawn = figure_files.run_figures(shareable(load_summary(run)))
    assert {text.get_text() for text in drawn["niah-heatmap"].axes[0].texts} == {"no score\n3 errors"}
    assert [text.get_text() for text in drawn["niah-length"].axes[0].texts] == ["no scored cell"]


def test_an_all_rejected_row_and_an_empty_task_are_drawn_saying_so(run_dir: Path, tmp_path: Path) -> None:
    edited = copy.deepcopy(load_summary(run_dir).model_dump())
    # niah alone (nolima's figures would only be drawn and written again) and an empty task
    edited["tasks"] = [task for task in edited["tasks"] if task["task"] == "niah"]
    edited["cells"] = [cell for cell in edited["cells"] if cell["task"] == "niah"]
    for cell in edited["cells"]:
        if cell["task"] == "niah" and cell["depth"] == 0.0:  # the verifier rejected every prompt
            cell.update(accuracy=None, ci_low=None, ci_high=None, n=0, all_rejected=True, rejected=3)
    edited["tasks"].append({**edited["tasks"][0], "task": "empty", "lengths": []})
    summary = Summary.model_validate_json(json.dumps(edited))
    drawn = figure_files.run_figures(shareable(summary))
    texts = [text.get_text() for text in drawn["niah-heatmap"].axes[0].texts]
    assert texts.count("rejected\n3 cases") == 3 and len(texts) == 9
    for stem in ("empty-heatmap", "empty-length", "empty-position"):
        assert [text.get_text() for text in drawn[stem].axes[0].texts] == ["no scored cell"], stem
    written = figure_files.write_figures(summary, tmp_path / "figs")
    assert len(written) == 21  # the empty task has no scores figure: nothing under both scores
    for path in written:
        _assert_valid(path)


def test_named_layouts_are_a_category_axis_in_their_family_order(tmp_path: Path) -> None:
    config = build_config(
        {
            "model": "fake/lexical",
            "tasks": ["reasoning"],
            "lengths": [500],
            "reasoning": {"items": 2, "fillers": ["with_solutions", "neutral"]},
        }
    )
    summary = shareable(load_summary(run_experiment(config, run_dir=tmp_path / "run")))
    axes = figure_files.run_figures(summary)["reasoning-position"].axes[0]
    assert [label.get_text() for label in axes.get_xticklabels()] == [
        "end",
        "middle",
        "middle_twice",
        "middle_dup",
    ]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == [
        "500 tokens, neutral",
        "500 tokens, with_solutions",
    ]
    heatmap = figure_files.run_figures(summary)["reasoning-heatmap"].axes[0]
    assert [label.get_text() for label in heatmap.get_yticklabels()][:2] == [
        "neutral · end",
        "neutral · middle",
    ]


def test_figures_without_matplotlib_are_one_line_naming_the_extra(run_dir: Path, tmp_path: Path) -> None:
    result = _cli(
        NO_MATPLOTLIB,
        "report",
        run_dir,
        "-o",
        tmp_path / "r.html",
        "--figures",
        tmp_path / "figs",
        path=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        "rotscope: --figures: drawing the figures needs matplotlib: pip install 'rotscope[figures]'"
    ]
    assert not (tmp_path / "figs").exists() and not (tmp_path / "r.html").exists()


def test_without_matplotlib_in_process_the_cli_says_the_same(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = invoke("report", run_dir, "-o", tmp_path / "r.html", "--figures", tmp_path / "figs")
    assert_bad_input(result, "--figures", "pip install 'rotscope[figures]'")


def test_a_figures_folder_that_cannot_be_made_is_one_line(run_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    result = invoke("report", run_dir, "-o", tmp_path / "r.html", "--figures", blocker / "figs")
    assert_bad_input(result, "--figures: cannot create", "figs")
    assert not (tmp_path / "r.html").exists()
