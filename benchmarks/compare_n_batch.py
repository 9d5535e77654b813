"""The bundled model compared with itself under two ``llamacpp.n_batch`` settings, end to end through
the command line: two subjects of one experiment that differ only in that engine option, run as one
interleaved session (``rotscope run --models``), then ``rotscope compare`` of the session folder.
A batch size changes how the prompt is prefilled, not what greedy decoding answers (on this model
and grid, benchmarks/engine_settings.py), so the comparison must show no difference. Run by hand:

    nice python benchmarks/compare_n_batch.py [--lengths 256,1024,2048] [--instances 16]

Prints the wall time of the session and of the comparison, how many replies are identical call by
call, the pair's verdict sentence and the leaderboard as Markdown (results in
benchmarks/results/compare_n_batch.md).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import yaml

SUBJECTS = {"batch128": 128, "batch512": 512}


def experiment(lengths: list[int], instances: int, depths: list[str]) -> dict[str, object]:
    """Two subjects of the bundled model, one thread each (one engine worker per subject)."""
    return {
        "name": "compare-n-batch",
        "model": "bundled",
        "tasks": ["niah"],
        "lengths": lengths,
        "depths": depths,
        "limit": instances,
        "controls": False,
        "llamacpp": {"n_threads": 1},
        "subjects": [
            {"name": name, "model": "bundled", "llamacpp": {"n_batch": n_batch}}
            for name, n_batch in SUBJECTS.items()
        ],
    }


def rotscope(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "rotscope"), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def replies(run_dir: Path) -> dict[str, str]:
    """Each work item's reply, by its case, length and position (what pairs the two subjects)."""
    with closing(sqlite3.connect(run_dir / "run.db")) as db:
        found = db.execute("SELECT case_id, length_target, position, trial, response FROM items").fetchall()
    return {f"{case}/{length}/{position}/{trial}": str(text) for case, length, position, trial, text in found}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="256,1024,2048")
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--depths", default="end")
    parser.add_argument("--keep", type=Path, default=None, help="Write the session here (kept).")
    args = parser.parse_args()
    lengths = [int(part) for part in args.lengths.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        config = root / "compare-n-batch.yaml"
        config.write_text(yaml.safe_dump(experiment(lengths, args.instances, args.depths.split(","))))
        session = root / "session"
        started = time.perf_counter()
        rotscope("run", config, "--models", ",".join(SUBJECTS), "--out", session)
        ran = time.perf_counter() - started
        started = time.perf_counter()
        comparison = json.loads(rotscope("compare", session, "--json").stdout)
        compared = time.perf_counter() - started
        markdown = rotscope("compare", session, "--markdown").stdout
        first, second = (replies(session / name) for name in SUBJECTS)
        same = sum(first[key] == second.get(key) for key in first)
    print(f"grid: niah, lengths {lengths}, depths {args.depths}, {args.instances} instances per length")
    print(f"session (2 subjects, interleaved): {ran:.1f} s wall; compare: {compared:.1f} s wall")
    print(f"replies identical call by call: {same}/{len(first)}")
    for pair in comparison["pairs"]:
        print(f"verdict: {pair['sentence']}")
        for entry in pair["lengths"]:
            print(
                f"  {entry['length']}: difference {entry['difference']}, pairs {entry['pairs']}, "
                f"p_holm {entry['p_holm']}, {entry['verdict']}"
            )
    print(markdown)


if __name__ == "__main__":
    main()
