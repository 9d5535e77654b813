"""Open the report in real headless Chromium: no console errors, one heatmap cell per (length, depth)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.html import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.browser


def _chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("ROTSCOPE_REQUIRE_BROWSER"):
            pytest.fail("Chromium is required here (ROTSCOPE_REQUIRE_BROWSER is set) but not installed")
        pytest.skip("Debian's chromium is not installed")
    return CHROMIUM


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    corpus = tmp_path / "log.txt"
    corpus.write_text("\n".join(f"rack {i % 9} ok." for i in range(2000)))
    config = build_config(
        {
            "tasks": ["niah"],
            "lengths": [200, 400, 800],
            "depths": ["beginning", "midpoint", "end"],
            "limit": 2,
            "filler": {"kind": "text", "glob": str(corpus)},
        }
    )
    run_dir = run_experiment(
        config, run_dir=tmp_path / "run", backend=FakeBackend("lexical", lexical_responder(0.5))
    )
    report = write_report(run_dir, tmp_path / "report.html")

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
        page.on("dialog", lambda dialog: problems.append(f"dialog: {dialog.message}"))
        page.on(
            "request",
            lambda request: None if request.url.startswith("file:") else problems.append(request.url),
        )
        page.goto(report.as_uri())
        page.wait_for_selector(".plotly .main-svg")
        cells = page.locator('table.heatmap[data-task="niah"] td.cell')
        pairs = {
            (cells.nth(i).get_attribute("data-length"), cells.nth(i).get_attribute("data-depth"))
            for i in range(cells.count())
        }
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()

    assert problems == []
    assert cells_expected() == pairs
    assert (tmp_path / "report.png").stat().st_size > 10_000


def cells_expected() -> set[tuple[str, str]]:
    return {(length, depth) for length in ("200", "400", "800") for depth in ("0.0", "0.5", "1.0")}
