"""Replicas with health (issue 52): the share of rows answered on a run's first pass (no
``--resume``) when one of a ``serve/NAME`` pool's replicas fails, per fault kind and when it starts.
Counts, not timings. Run by hand:

    python benchmarks/replica_health.py [--limit 6] [--replicas 2] [--write]

Each case runs a niah grid (``--limit`` cases x 3 lengths x 5 depths) on ``--replicas`` fake vLLM
servers (``tests/support/completions_server.py``), the last of which fails: HTTP 500, a reply that
counts 3 prompt tokens too many, a body that is not JSON, no reply past the client's timeout, or a
refused connection (it stops listening); from its first call, after its 5th, or on every other call
from the start. The serve options are the defaults (``max_attempts`` 3, ``unhealthy_after`` 3) but
for ``timeout_s`` (1 s, so a hang costs a second, not ten minutes). ``--write`` writes
``benchmarks/results/replica_health.md``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.completions_server

from tests.support.completions_server import FAULTS, CompletionsServer  # noqa: E402

from rotscope.analysis.summary import load_summary  # noqa: E402
from rotscope.backends.llamacpp.backend import bundled_model_path  # noqa: E402
from rotscope.config.experiment import build_config  # noqa: E402
from rotscope.errors import BadInput  # noqa: E402
from rotscope.execution.workflows.runner import run_experiment  # noqa: E402

STARTS: dict[str, dict[str, int]] = {
    "first call": {"fault_after": 0},
    "after its 5th": {"fault_after": 5},
    "every other call": {"fault_every": 2},
}
RESULTS = REPO / "benchmarks" / "results" / "replica_health.md"


def run_case(out: Path, fault: str, start: dict[str, int], limit: int, replicas: int) -> dict[str, Any]:
    servers = [CompletionsServer(kind="vllm").start() for _ in range(replicas - 1)]
    failing = CompletionsServer(kind="vllm", hang_s=3.0, fault=fault, **start).start()  # type: ignore[arg-type]
    servers.append(failing)
    config = {
        "name": "replica-health",
        "model": "serve/smollm2",
        "tasks": ["niah"],
        "limit": limit,
        "lengths": [200, 300, 400],
        "depths": [0.0, 0.25, 0.5, 0.75, 1.0],
        "filler": {"kind": "code", "package": "json"},
        "generation": {"temperature": 0.0, "max_tokens": 8, "seed": 7},
        "cache": {"enabled": False},
        "score": "accuracy",
        "serve": {
            "tokenizer": str(bundled_model_path()),
            "base_url": ",".join(server.base_url for server in servers),
            "timeout_s": 1.0,
        },
        "out": str(out),
    }
    stopped = None
    try:
        run_experiment(build_config(config))
    except BadInput as refused:
        stopped = str(refused)
    finally:
        for server in servers:
            server.stop()
    with sqlite3.connect(out / "run.db") as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM items")]
    lines = {line.replica: line for line in load_summary(out).execution.replicas or []}
    sick = lines[failing.base_url]
    return {
        "rows": len(statuses),
        "ok": statuses.count("ok"),
        "errors": statuses.count("error"),
        "calls": sick.calls,
        "failures": sick.failures,
        "taken_out": sick.taken_out,
        "at_call": sick.at_call,
        "others": sum(line.calls for url, line in lines.items() if url != failing.base_url),
        "stopped": stopped,
    }


def table(results: list[tuple[str, str, dict[str, Any]]], replicas: int) -> list[str]:
    lines = [
        f"| fault | starts | rows | ok on the first pass | share ok | error rows | failing replica: calls, "
        f"failed, taken out (after call) | calls on the {replicas - 1} healthy |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for fault, start, found in results:
        out = f"{found['taken_out']}x (call {found['at_call']})" if found["taken_out"] else "no"
        lines.append(
            f"| {fault} | {start} | {found['rows']} | {found['ok']} | {found['ok'] / found['rows']:.1%} | "
            f"{found['errors']} | {found['calls']}, {found['failures']}, {out} | {found['others']} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    results: list[tuple[str, str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as folder:
        for fault in FAULTS:
            for name, start in STARTS.items():
                if fault == "refuse" and name == "every other call":
                    continue  # a server that stopped listening stays gone
                found = run_case(
                    Path(folder) / f"{fault}-{len(results)}", fault, start, args.limit, args.replicas
                )
                results.append((fault, name, found))
                print(fault, name, found, flush=True)
    lines = table(results, args.replicas)
    print("\n".join(lines))
    if args.write:
        worst = min(found["ok"] / found["rows"] for _, _, found in results)
        RESULTS.write_text(
            "\n".join(
                [
                    "# Replicas with health: rows answered on the first pass while one replica fails",
                    "",
                    f"`python benchmarks/replica_health.py --limit {args.limit} --replicas {args.replicas} "
                    "--write` (counts, not timings): a niah grid on fake vLLM servers, the last of the pool "
                    "failing as the row says; serve options at their defaults (max_attempts 3, "
                    "unhealthy_after 3) but timeout_s 1.",
                    "",
                    *lines,
                    "",
                    f"Lowest share of rows ok on the first pass: {worst:.1%} (the acceptance asks >= 95%).",
                    "",
                ]
            ),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
