"""What reading the gold answer's likelihood costs and gives on the quick grid. Run by hand, on an
idle machine:

    python benchmarks/likelihood_quick.py [--config examples/quick.yaml] [--out DIR] \
        [--scores accuracy,likelihood,both]

Runs the experiment once per score (``rotscope run CONFIG --score S``, each in a fresh folder under
``--out``), and prints, per score: the wall time of the whole command, the model calls, the prompt
and completion tokens the engine reported, and the load average before and after; then, from the
``both`` run (or the one that has both columns), each length's accuracy and mean answer
probability on the same instances, with each score's interval through the project's own cell
statistics (``analysis.cells.cell_stats`` on ``rows.on_score``). The numbers are written up in
benchmarks/results/likelihood_quick.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from rotscope.analysis.cells import cell_stats
from rotscope.rows import on_score, scored
from rotscope.store import RunStore


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run_once(config: Path, score: str, folder: Path) -> dict[str, object]:
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rotscope = Path(sys.executable).with_name("rotscope")
    command = [str(rotscope), "run", str(config), "--score", score, "--out", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{score}: rotscope run exited {done.returncode}: {done.stderr.strip()[-400:]}")
    with RunStore.read(folder) as store:
        rows = store.rows()
    return {
        "score": score,
        "wall_s": wall,
        "calls": len({row["call_id"] for row in rows}),
        "prompt_tokens": sum(row["usage_prompt_tokens"] or 0 for row in rows),
        "completion_tokens": sum(row["usage_completion_tokens"] or 0 for row in rows),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "headline": done.stdout.strip().splitlines()[-3:],
    }


def per_length(folder: Path) -> list[str]:
    with RunStore.read(folder) as store:
        rows = [row for row in store.rows() if not row["control"]]
    lines = ["| length | accuracy [95%] | answer probability [95%] | instances |", "|---|---|---|---|"]
    for length in sorted({row["length_target"] for row in rows}):
        at = [row for row in rows if row["length_target"] == length]
        accuracy = cell_stats(on_score(at, "accuracy"))
        likelihood = cell_stats(on_score(at, "likelihood"))
        both = [
            f"{cell.instance_accuracy:.2f} [{cell.ci_low:.2f}, {cell.ci_high:.2f}]"
            for cell in (accuracy, likelihood)
        ]
        lines.append(f"| {length:,} | {both[0]} | {both[1]} | {len(scored(at))} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path("examples/quick.yaml"))
    parser.add_argument("--out", type=Path, default=Path("/tmp/likelihood-quick"))
    parser.add_argument("--scores", default="accuracy,likelihood,both")
    args = parser.parse_args()
    print(f"CPU: {_cpu()}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}")
    results = []
    for score in args.scores.split(","):
        folder = args.out / score
        if folder.exists():
            raise SystemExit(f"{folder} exists: give another --out")
        results.append(run_once(args.config, score, folder))
    print("| --score | wall | calls | prompt tokens | completion tokens | load before / after |")
    print("|---|---|---|---|---|---|")
    for found in results:
        print(
            f"| {found['score']} | {found['wall_s']:.1f} s | {found['calls']} | {found['prompt_tokens']:,} "
            f"| {found['completion_tokens']:,} | {found['load_before']:.2f} / {found['load_after']:.2f} |"
        )
    if "both" in args.scores.split(","):
        print()
        print("\n".join(per_length(args.out / "both")))
        print()
        print("\n".join(next(r["headline"] for r in results if r["score"] == "both")))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
