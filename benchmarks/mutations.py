"""Does the suite still catch the bugs it exists for? Each mutation below breaks one guard of the flow
in a copy of ``src/``; the fast tiers (``tests/unit`` and ``tests/flows``) run against the copy and must
fail. A mutation that every test survives is a guard the suite has lost.

Run: ``python benchmarks/mutations.py [NAME ...]`` (all five by default; each stops at its first failing
test, so a caught mutation costs seconds and a survivor the whole fast tiers). Exit 1 when any survives.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    path: str
    """The file under ``src/rotscope``."""
    before: str
    after: str


MUTATIONS = (
    Mutation(
        "planner-span-shift",
        "the planner records each evidence span one token later than it placed it",
        "prompt/builder.py",
        "spans.append(Span(item.evidence_id, len(ids), len(ids) + len(piece),",
        "spans.append(Span(item.evidence_id, len(ids) + 1, len(ids) + len(piece) + 1,",
    ),
    Mutation(
        "verifier-accepts-shift",
        "the verifier no longer checks that the evidence's tokens are at its span",
        "prompt/verify.py",
        "        if (\n            not _spans_line(piece, evidence.text, tokenizer)",
        "        if False and (\n            not _spans_line(piece, evidence.text, tokenizer)",
    ),
    Mutation(
        "scorer-ignores-forbidden",
        "a reply making a forbidden claim is scored on its required claims alone",
        "scoring/deterministic.py",
        "    if report.forbidden:\n",
        "    if False:\n",
    ),
    Mutation(
        "store-drops-a-row-on-resume",
        "a resumed run leaves one unfinished call out of what it calls again",
        "store.py",
        "return {row[0] for row in self._db.execute("
        "\"SELECT DISTINCT call_id FROM items WHERE status != 'ok'\")}",
        "return set(sorted(row[0] for row in self._db.execute("
        "\"SELECT DISTINCT call_id FROM items WHERE status != 'ok'\"))[1:])",
    ),
    Mutation(
        "gate-skips-holm",
        "the gate fails a slice on its unadjusted p-value instead of Holm's",
        "gate/decision.py",
        "    p_inferior_holm = holm_array(p_inferior)\n",
        "    p_inferior_holm = p_inferior\n",
    ),
)


def mutated_copy(mutation: Mutation, folder: Path) -> Path:
    """A copy of ``src/`` with ``mutation`` applied; its ``src`` folder."""
    source = folder / "src"
    shutil.copytree(ROOT / "src", source, ignore=shutil.ignore_patterns("__pycache__"))
    target = source / "rotscope" / mutation.path
    text = target.read_text(encoding="utf-8")
    if text.count(mutation.before) != 1:
        raise SystemExit(f"{mutation.name}: the code it mutates has changed in {mutation.path}; update it")
    target.write_text(text.replace(mutation.before, mutation.after), encoding="utf-8")
    return source


def caught(mutation: Mutation, tiers: list[str]) -> tuple[bool, str, float]:
    """Whether a test fails on the mutated copy, the first failing test's line, the seconds it took."""
    with tempfile.TemporaryDirectory(prefix="rotscope-mutation-") as folder:
        source = mutated_copy(mutation, Path(folder))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(ROOT)])}
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tiers],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        failed = [line for line in result.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        # caught: a test failed, whether pytest then exits 1 or 2 (xdist's -x interrupts the session)
        return bool(failed), (failed[0] if failed else result.stdout[-300:]), time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutations to try (default: all)")
    parser.add_argument("--tiers", default="tests/unit,tests/flows", help="test folders, comma-separated")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    survivors = 0
    for mutation in chosen:
        found, line, seconds = caught(mutation, args.tiers.split(","))
        survivors += not found
        print(f"{'caught ' if found else 'SURVIVED'} {mutation.name} ({seconds:.0f} s): {mutation.what}")
        print(f"         {line}")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
