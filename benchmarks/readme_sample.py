"""The README's sample screen ("What the quick run shows"), rendered from a real quick run's stored
rows: ``python benchmarks/readme_sample.py`` prints it, ``--write`` puts it into README.md between
its markers. ``tests/flows/test_readme_sample.py`` keeps the README equal to what this renders.

The rows are the fixture ``tests/fixtures/runs/quick-both`` (``rotscope run --score both --out both``
on the bundled model, 2026-12-06; benchmarks/results/likelihood_quick.md); the screen is the one
``rotscope show both`` prints in a 100-column log.
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from rotscope.analysis.summary import load_summary
from rotscope.report.terminal import print_summary

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "quick-both"
README = ROOT / "README.md"
FOLDER = "both"
"""The folder name the run was made into, as its screen names it."""
WIDTH = 100
BEGIN = "<!-- readme-sample: begin (benchmarks/readme_sample.py --write) -->"
END = "<!-- readme-sample: end -->"


def render(fixture: Path = FIXTURE) -> str:
    """The screen ``rotscope show both`` prints at ``WIDTH`` columns, from a copy of the fixture
    (reading a run folder may leave a lock file beside it)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / FOLDER
        shutil.copytree(fixture, folder)
        buffer = io.StringIO()
        console = Console(file=buffer, width=WIDTH, color_system=None, force_terminal=False)
        print_summary(load_summary(folder), console, FOLDER)
        return buffer.getvalue()


def block(screen: str) -> str:
    """The README's block for ``screen``: its markers around a fenced text block."""
    return f"{BEGIN}\n```text\n{screen.rstrip()}\n```\n{END}"


def readme_block(readme: str) -> str:
    """The README's current block, markers included (``ValueError`` without them)."""
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    return readme[start:end]


def main(argv: list[str]) -> int:
    screen = render()
    if "--write" not in argv:
        sys.stdout.write(screen)
        return 0
    text = README.read_text(encoding="utf-8")
    README.write_text(text.replace(readme_block(text), block(screen)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
