"""The quick run against its physical limit, and how honest its time left is. Run by hand, on an
idle machine (nothing else running; the load average is printed beside every number):

    python benchmarks/quick_physical.py [--config examples/quick.yaml] [--out DIR] [--score S] [--lines]

1. Times the engine the way ``rotscope doctor`` does (``backends.llamacpp.doctor.measure_setting``:
   each repeat a cold prefill of 400 tokens, then 32 generated tokens) at the thread count and
   batch the run uses.
2. Runs ``rotscope run CONFIG --score S --out DIR`` with its progress as plain lines (stdout a pipe),
   each line stamped with the time it arrived.
3. From the run's rows: the prompt tokens the engine evaluated (its count minus what its prefix
   cache held) and the tokens it generated. The physical limit is evaluated / prefill rate +
   generated / decode rate: the engine's own arithmetic, with no planning, verification, model
   loading or Python around it. The run's wall time over that limit is what everything else costs.
4. Each progress line's ETA against when the run really ended, from the first quarter of the items
   on (the issue's target: within 30%).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.doctor import measure_setting
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.execution.doctor import in_worker
from rotscope.store import RunStore

ETA = re.compile(r"^(\d+)/(\d+) items .*, ETA (?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def _seconds(hours: str | None, minutes: str | None, seconds: str | None) -> int:
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)


def engine_rates() -> tuple[float, float, int, int]:
    path = bundled_model_path()
    settings = LlamaCppBackend(path, LlamaCppOptions()).resolve_settings()
    setting = (settings.threads, settings.n_batch)

    def make(model: Path, chosen: tuple[int, int]) -> LlamaCppBackend:
        return LlamaCppBackend(model, LlamaCppOptions(n_threads=chosen[0], n_batch=chosen[1]))

    measured = measure_setting(path, setting, in_worker, make)
    return measured.prefill_tps, measured.decode_tps, setting[0], setting[1]


def run(config: Path, score: str, folder: Path) -> tuple[float, list[tuple[float, str]]]:
    rotscope = Path(sys.executable).with_name("rotscope")
    command = [str(rotscope), "run", str(config), "--score", score, "--out", str(folder)]
    started = time.perf_counter()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.perf_counter() - started, line.rstrip("\n")))
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"rotscope run exited {process.returncode}: {lines[-3:]}")
    return wall, lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, default=Path("examples/quick.yaml"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--score", default="accuracy")
    parser.add_argument("--lines", action="store_true", help="print every line of the run, stamped")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="quick-physical-")) / "run"
    load = os.getloadavg()[0]
    prefill, decode, threads, batch = engine_rates()
    wall, lines = run(args.config, args.score, folder)
    with RunStore.read(folder) as store:
        rows = store.rows()
    evaluated = sum((row["usage_prompt_tokens"] or 0) - (row["cached_tokens"] or 0) for row in rows)
    generated = sum(row["usage_completion_tokens"] or 0 for row in rows)
    model_s = sum(row["latency_s"] or 0.0 for row in rows)
    limit = evaluated / prefill + generated / decode
    print(f"machine: load average {load:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} CPUs")
    print(
        f"engine: {prefill:,.0f} prompt tokens/s, {decode:,.0f} generated tokens/s "
        f"({threads} threads, n_batch {batch})"
    )
    print(f"run: {len(rows)} rows, {evaluated:,} prompt tokens evaluated, {generated:,} generated")
    print(f"physical limit {limit:.1f} s; the engine's calls took {model_s:.1f} s; wall {wall:.1f} s "
          f"= {wall / limit:.2f}x the limit")  # fmt: skip
    errors = []
    for at, line in lines:
        found = ETA.match(line)
        if not found:
            continue
        done, total = int(found.group(1)), int(found.group(2))
        if done * 4 < total:
            continue
        left = _seconds(found.group(3), found.group(4), found.group(5))
        errors.append(abs(at + left - wall) / wall)
        print(
            f"  at {done}/{total} items ({at:.0f} s): ETA {left} s, so the end at {at + left:.0f} s; "
            f"really {wall:.0f} s"
        )
    print(
        f"ETA from the first quarter on: the predicted end within {max(errors, default=0.0):.0%} of the "
        "real one"
    )
    for at, line in lines if args.lines else ():
        print(f"  {at:6.1f} s | {line}")
    for _, line in lines:
        if line.startswith("slow machine:"):
            print(f"notice: {line}")


if __name__ == "__main__":
    main()
