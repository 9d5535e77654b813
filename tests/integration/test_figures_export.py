"""``rotscope report RUN --figures DIR`` exports SVG and PNG through kaleido and headless Chromium;
skipped where either is missing, as the browser test of the report is."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from rotscope.config import build_config
from rotscope.execution.workflows.runner import run_experiment
from tests.support.cli_helpers import invoke, nonsense_corpus

pytestmark = pytest.mark.browser
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _require_export() -> None:
    missing = [
        what
        for what, present in (
            ("kaleido (pip install 'rotscope[figures]')", importlib.util.find_spec("kaleido") is not None),
            ("Chromium", bool(shutil.which("chromium") or shutil.which("chromium-browser"))),
        )
        if not present
    ]
    if missing:
        if os.environ.get("ROTSCOPE_REQUIRE_BROWSER"):
            pytest.fail(f"figure export is required here but {', '.join(missing)} is missing")
        pytest.skip(f"{', '.join(missing)} not installed")


def test_figures_are_written_as_svg_and_png_naming_the_model(tmp_path: Path) -> None:
    _require_export()
    config = build_config(
        {
            "model": "fake/lexical-recent",
            "tasks": ["niah"],
            "lengths": [200, 400],
            "depths": [0.0, 0.5, 1.0],
            "limit": 2,
            "filler": {"kind": "text", "glob": str(nonsense_corpus(tmp_path / "corpus") / "*.txt")},
        }
    )
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    result = invoke("report", run_dir, "--figures", tmp_path / "figs")
    assert result.exit_code == 0, result.output
    stems = ("niah-heatmap", "niah-length", "niah-position")
    for stem in stems:
        svg = (tmp_path / "figs" / f"{stem}.svg").read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<svg") and "fake/lexical-recent" in svg and "niah" in svg
        assert "effective length" in svg
        png = (tmp_path / "figs" / f"{stem}.png").read_bytes()
        assert png.startswith(PNG_SIGNATURE) and len(png) > 10_000
    assert sorted(path.name for path in (tmp_path / "figs").iterdir()) == sorted(
        f"{stem}.{kind}" for stem in stems for kind in ("svg", "png")
    )
