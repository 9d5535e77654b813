"""What the figure files draw is safe in an SVG and drawn as written: control characters as their
escapes, XML's two non-characters replaced, a ``$`` kept a dollar (not matplotlib's math mode);
and matplotlib is imported only to draw."""

from __future__ import annotations

import subprocess
import sys

from rotscope.report import figure_files


def test_drawable_text_is_xml_safe_and_keeps_a_dollar() -> None:
    assert figure_files.drawable("a\x1b[31m\x07b") == r"a\x1b[31m\x07b"
    assert figure_files.drawable("\x00\ufffe\uffff\ud800") == "\\x00\ufffd\ufffd\\ud800"
    assert figure_files.drawable("$x^$ 5$") == r"\$x^\$ 5\$"
    assert figure_files.drawable("niah · 1,000 tokens, é") == "niah · 1,000 tokens, é"


def test_matplotlib_is_imported_only_when_figures_are_drawn() -> None:
    script = (
        "import sys, rotscope.cli, rotscope.report.figure_files, rotscope.report.html; "
        "print('matplotlib' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert shown.stdout.strip() == "False", shown.stderr
