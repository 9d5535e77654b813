"""Open the comparison in real headless Chromium: offline (no request leaves the file), no console
error, one drawn curve per model in the overlay and one heat map per model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.compare.analysis import build_comparison, load_runs
from rotscope.compare.html import write_comparison
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.browser


def _chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("ROTSCOPE_REQUIRE_BROWSER"):
            pytest.fail("Chromium is required here (ROTSCOPE_REQUIRE_BROWSER is set) but not installed")
        pytest.skip("Debian's chromium is not installed")
    return CHROMIUM


def test_the_comparison_renders_one_curve_per_model_in_headless_chromium(tmp_path: Path) -> None:
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    corpus = tmp_path / "log.txt"
    corpus.write_text("\n".join(f"rack {i % 9} ok." for i in range(2000)))
    config = build_config(
        {
            "tasks": ["niah"],
            "lengths": [200, 400],
            "depths": ["beginning", "end"],
            "limit": 4,
            "filler": {"kind": "text", "glob": str(corpus)},
        }
    )
    folders = [
        run_experiment(config, run_dir=tmp_path / name, backend=FakeBackend("lexical", responder))
        for name, responder in (("whole", lexical_responder()), ("recent", lexical_responder(0.5)))
    ]
    runs = load_runs(folders)
    page_file = write_comparison(
        build_comparison(runs), {run.name: run.summary for run in runs}, tmp_path / "compare.html"
    )

    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
            ],
        )
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on(
            "request",
            lambda request: None if request.url.startswith("file:") else problems.append(request.url),
        )
        page.goto(page_file.as_uri())
        page.wait_for_selector(".figure.overlay .plotly .main-svg")
        curves = page.locator(".figure.overlay .scatterlayer .trace").count()
        heatmaps = page.locator(".figure.heatmaps .hm").count()
        browser.close()

    assert problems == []
    assert curves == len(folders), curves
    assert heatmaps == len(folders), heatmaps  # side by side: one heat map each
