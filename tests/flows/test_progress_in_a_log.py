"""A run whose stdout is a file (a CI log, ``> run.log``) prints plain progress lines: counts,
percentages, no ANSI escape and no carriage return, the 100% line last (issue 35, item 4)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

LINE = re.compile(
    r"^(\d+)/(\d+) items \((\d+)%\), (\d+) errors?, [\d,]+ prompt tok/s, \S+ elapsed, (ETA \S+|done)$"
)
ROOT = Path(__file__).resolve().parents[2]


def test_a_run_into_a_file_logs_plain_progress_lines(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("FORCE_COLOR", None)
    env.pop("TTY_COMPATIBLE", None)
    script = "from rotscope.cli import app; app()"
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(
            [sys.executable, "-c", script, "run", "--model", "fake/lexical", "--out", str(tmp_path / "run")],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    assert "\x1b" not in text and "\r" not in text
    matches = [LINE.match(line) for line in text.splitlines()]
    found = [match for match in matches if match is not None]
    assert len(found) >= 10, text
    totals = {int(match.group(2)) for match in found}
    assert totals == {48}, totals  # the quick experiment's 48 calls
    percents = [int(match.group(3)) for match in found]
    assert percents == sorted(percents) and percents[0] <= 10
    last = found[-1]
    assert (last.group(1), last.group(3), last.group(5)) == ("48", "100", "done")
    assert [int(match.group(1)) * 100 // 48 for match in found] == percents  # the percent is the count's
    assert "run folder:" in text.split(last.group(0))[1]  # the summary comes after the progress
