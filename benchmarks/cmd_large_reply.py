"""A ``cmd/`` command whose reply is one 50 MB line: does the run complete, and at what peak
memory? (Before the fix it peaked at 5.3 GB over 105 s: the reply was compiled into a regex.)

    python benchmarks/cmd_large_reply.py [--megabytes 50]

Runs ``rotscope run`` on a one-call experiment in a child process and reads that process's peak
resident set size from ``wait4`` (``ru_maxrss``), with its wall time and the row's outcome.

Measured (2 shared cores under load, 2026-12-02): 50,000,000 bytes, exit 0, 42.8 s, peak RSS 523 MiB,
the reply stored whole and scored (benchmarks/results/cmd_containment.md).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROTSCOPE = Path(sys.executable).with_name("rotscope")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=50)
    size = parser.parse_args().megabytes * 1_000_000
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        command = folder / "flood.sh"
        command.write_text(
            f"#!/bin/sh\ncat > /dev/null\nhead -c {size} /dev/zero | tr '\\0' 'a'\necho\n", encoding="utf-8"
        )
        command.chmod(0o755)
        experiment = folder / "experiment.yaml"
        experiment.write_text(
            yaml.safe_dump(
                {
                    "name": "flood",
                    "model": f"cmd/{command}",
                    "tasks": ["niah"],
                    "lengths": [256],
                    "depths": ["midpoint"],
                    "limit": 1,
                    "controls": False,
                    "cmd": {"max_attempts": 1},
                }
            ),
            encoding="utf-8",
        )
        started = time.monotonic()
        pid = os.spawnv(
            os.P_NOWAIT, str(ROTSCOPE), [str(ROTSCOPE), "run", str(experiment), "--out", str(folder / "run")]
        )
        _, status, usage = os.wait4(pid, 0)
        seconds = time.monotonic() - started
        with sqlite3.connect(folder / "run" / "run.db") as db:
            outcome, error, length = db.execute(
                "SELECT outcome, coalesce(error, ''), length(coalesce(response, '')) FROM items"
            ).fetchone()
        print(
            f"reply {size:,} bytes: exit {os.waitstatus_to_exitcode(status)}, {seconds:.1f} s, "
            f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB, outcome {outcome}, stored reply {length:,} chars"
            f"{', error ' + error[:80] if error else ''}"
        )


if __name__ == "__main__":
    main()
