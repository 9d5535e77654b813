"""Ingest speed of ``rotscope monitor ingest`` (issues 37 and 52), one process, one thread:
generates N outcome records (default a million) in a temporary folder, ingests them into a fresh
store (the labels declared, every ``cluster_id`` re-hashed, staged and copied in one transaction)
and prints records/s (wall, and per CPU second of the process, which a machine shared with other
work slows in wall time only) and the peak RSS (``resource.getrusage``: the generation streams to
disk first, so the peak is the ingest's). Then the same file with one bad record at the end
(``length_tokens`` 2**70) into a second fresh store: it must store nothing (no store is made) and
name the last line. Run: ``nice python benchmarks/monitor_ingest.py [N]``."""

from __future__ import annotations

import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from rotscope.errors import BadInput
from rotscope.monitor.ingest import ingest
from rotscope.monitor.vocabulary import Vocabulary

OUTCOMES = ("answered", "answered", "answered", "missing_citation", "abstained", "truncation_rejected")


def generate(path: Path, count: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for number in range(count):
            record: dict[str, object] = {
                "ts": f"2026-01-{1 + number % 28:02d}T{number % 24:02d}:{number % 60:02d}:00.{number:06d}Z",
                "length_tokens": rng.randrange(1000, 128_000),
                "evidence_quantile": round(rng.random(), 4),
                "outcome": rng.choice(OUTCOMES),
                "language": rng.choice(("en", "de", "fr", "ja")),
                "risk": rng.choice(("low", "high")),
                "evidence_count": rng.randrange(0, 5),
                "model_digest": "sha256:0f3a9c",
                "cluster_id": f"{rng.getrandbits(64):016x}",
                "tenant": f"t{rng.randrange(50)}",
            }
            if number % 7 == 0:
                record["evidence_quantile"] = [round(rng.random(), 4), round(rng.random(), 4)]
            handle.write(json.dumps(record) + "\n")


LABELS = Vocabulary(
    {"tenant": frozenset(f"t{n}" for n in range(50)), "model_digest": frozenset(["sha256:0f3a9c"])}
)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "outcomes.jsonl"
        generate(source, count)
        size = source.stat().st_size
        start, cpu = time.perf_counter(), time.process_time()
        result = ingest(Path(folder) / "monitor.db", source, labels=LABELS)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        store = (Path(folder) / "monitor.db").stat().st_size
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"records: {count} ({size / 2**20:.0f} MiB of JSONL), stored {result.added}")
        print(f"ingest: {elapsed:.1f} s wall, {count / elapsed:,.0f} records/s")
        print(f"ingest CPU time (this process): {cpu:.1f} s, {count / cpu:,.0f} records per CPU second")
        print(f"peak RSS: {peak_mib:.0f} MiB; store file {store / 2**20:.0f} MiB")
        with source.open("a", encoding="utf-8") as handle:
            bad = {"ts": "2026-02-01T00:00:00Z", "length_tokens": 2**70, "evidence_quantile": 0.5}
            handle.write(json.dumps({**bad, "outcome": "answered"}) + "\n")
        refused_store = Path(folder) / "refused.db"
        start = time.perf_counter()
        try:
            ingest(refused_store, source, labels=LABELS)
            message = "NOT REFUSED"
        except BadInput as error:
            message = str(error)
        elapsed = time.perf_counter() - start
        kept = "nothing stored (no store made)" if not refused_store.exists() else "A STORE WAS MADE"
        print(f"one bad record at line {count + 1}: {elapsed:.1f} s, {kept}; {message}")
    print(f"peak RSS over both: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
