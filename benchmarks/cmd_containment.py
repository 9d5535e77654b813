"""Signals to rotscope with ``cmd/`` calls in flight, 10 runs per signal (tests/support/hostile_cmd.py):
after each, is any process the command started (itself, a background child, a double-forked
``setsid`` daemon) alive 5 s after rotscope exited (through ``/proc``: recorded pids and every
process carrying the run's environment mark), and does a rotscope temporary folder remain?

    python benchmarks/cmd_containment.py [--runs 10]

Expected: 0 processes left after every signal; 0 folders after SIGTERM and SIGINT; after SIGKILL
the folders remain and the next ``cmd/`` run's ``clean_stale`` removes them all.

Measured (2 shared cores, 2026-12-02, 10 runs per signal; table in benchmarks/results/cmd_containment.md):
0 processes left after SIGTERM (83 recorded), SIGINT (79) and SIGKILL (87); 0 temp folders left after
SIGTERM and SIGINT; after SIGKILL 40 left, all 40 removed by the next run.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import tempfile
from pathlib import Path

from tests.support.hostile_cmd import clean_up, interrupt, temp_folders

from rotscope.backends.cmd.backend import clean_stale


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    print(
        "| signal | runs | exit codes | processes recorded | left after 5 s | temp folders left | "
        "removed by next run | exit after signal (median s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        codes: set[int] = set()
        recorded = left = temps = removed = 0
        exit_s: list[float] = []
        for number in range(runs):
            with tempfile.TemporaryDirectory() as folder:
                outcome = interrupt(Path(folder) / f"run{number}", signum)
                stray = sorted(set(outcome.left_recorded) | set(outcome.left_marked))
                clean_up(stray)
                codes.add(outcome.returncode)
                recorded += len(outcome.recorded_pids)
                left += len(stray)
                temps += len(outcome.temp_left)
                tmpdir = Path(folder) / f"run{number}" / "tmp"
                removed += len(clean_stale(tmpdir))
                assert not temp_folders(tmpdir)
                exit_s.append(outcome.exit_s)
        print(
            f"| {signum.name} | {runs} | {sorted(codes)} | {recorded} | {left} | {temps} | {removed} | "
            f"{statistics.median(exit_s):.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
