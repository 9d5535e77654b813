"""Remote call orders against a real server that reuses the prefix of its last prompt: the
measurement behind the default ``order:`` (``rotscope.plan.schedule``). Run by hand:

    python benchmarks/prefix_order.py [--config examples/quick-v1.yaml] [--concurrency 4]
        [--lengths 128,256] [--limit 3] [--max-tokens 16] [--threads 1] [--server-cache 512]

(the options shrink the grid and the replies for a machine shared with other work; each
``--lengths`` replaces the config's; ``--server-cache MB`` turns on the server's ``--cache`` RAM
state cache of that size; ``--orders grouped`` runs only those orders, on one fresh server, and
``--keep DIR`` keeps the run folders and the server log).

Starts llama-cpp-python's OpenAI-compatible server on the bundled model (``tests/llama_server.py``)
and runs the experiment through it as ``openai/smollm2`` once per order (``interleaved``,
``grouped``, ``prefix``), each into a fresh run folder. The server reports no cached tokens, so the
tokens it kept are read from its prefix-hit log (at ``--concurrency 1`` also into each row, through
``remote.server_log``, and the summary's sum printed); it evaluates the rest. Prints, per order: the
prompt tokens the server evaluated, as a multiple of the trie lower bound, the cached-token share,
the wall time, and whether every outcome equals the other orders' (temperature 0).

Measured 2026-12-01 on the 2-core machine shared with other work (so wall times are loose),
``--lengths 128,256 --limit 3 --max-tokens 16 --threads 1``, concurrency 4, 42 calls per order,
lower bound 4,113 prompt tokens of 8,448 sent:

    order        evaluated  x bound  cached  wall s  outcomes
    interleaved      5,492     1.34     35%     542  same
    grouped          4,340     1.06     49%     340  same
    prefix           4,104     1.00     51%     178  same

(``prefix`` came in under the bound: its first prompt shared a prefix with the grouped run's last.)

Again 2026-12-01 at ``--concurrency 1 --max-tokens 8 --threads 2`` (load average 3-7 on 2 cores),
each row's cached tokens counted through ``remote.server_log``; their sums equal the log's hits:

    order        evaluated  x bound  cached  wall s  outcomes  rows' cached tokens
    interleaved      5,520     1.34     35%     358  same           2,928
    grouped          4,330     1.05     49%     225  same           4,118
    prefix           4,072     0.99     52%     150  same           4,376

The full quick grid, 2026-12-01, ``--concurrency 1 --threads 1`` (each row's cached tokens from
the log; their sums equal the log's hits in every run), replies of the config's 32 tokens. Load
average 4-9 on the 2 cores throughout (other runs beside it), so wall times are loose; the token
counts do not depend on the load.

quick-v1 as frozen (lengths 256/512/1,024, limit 3), the server as shipped, 72 calls per order,
lower bound 15,299 prompt tokens of 43,008 sent:

    order        evaluated  x bound  cached  wall s  outcomes  load at end
    interleaved     28,846     1.89     33%     764  same          4.7
    grouped         15,864     1.04     63%     318  same          4.2
    prefix          15,258     1.00     65%     323  same          5.3

The same with the server's ``--cache`` RAM state cache (``--server-cache 1024``), each order on a
fresh server (``--orders ORDER``; three at once, load 3-9):

    order        evaluated  x bound  cached  wall s  outcomes (replies) equal to interleaved's
    interleaved     15,299     1.00     64%     617  72/72
    grouped         15,299     1.00     64%     591  72/72 (72/72)
    prefix          (server OOM-killed after 66 calls: 6 error rows; 13,101 evaluated for the 66,
                     their outcomes and replies equal to interleaved's)

The saved states restore any evaluated prefix, so every order evaluates exactly the bound. But the
cache's size counts only llama.cpp's state (about 6 MB each here), not the copy of the logits each
saved ``LlamaState`` holds: with 1,024 MB allowed a server grew past 9 GB and the kernel killed it.
On one server for all three orders (states carried from one order into the next) the orders
evaluated 15,299, 655 and 2,416 tokens, and ``grouped`` gave some outcomes other than ``prefix``'s.

A 4-length grid, ``--lengths 256,512,1024,2048 --limit 1`` (limit 2 did not fit the time at this
load), the server as shipped, 32 calls per order, lower bound 11,245 of 30,720 sent:

    order        evaluated  x bound  cached  wall s  outcomes  load at end
    interleaved     23,171     2.06     25%     870  same          8.6
    grouped         11,715     1.04     62%     417  same          6.6
    prefix          11,204     1.00     64%     174  same          4.1

(``prefix`` under the bound in each: the server keeps its KV cache between orders, and the first
prompt of the trie order shares a prefix with ``grouped``'s last.)
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from rotscope.analysis.summary import load_summary
from rotscope.backends.llamacpp.backend import bundled_model_path
from rotscope.config.experiment import build_config, read_config_file
from rotscope.execution.workflows.runner import run_experiment

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.llama_server import SERVED_NAME, prefix_hits, served  # noqa: E402

ORDERS = ("interleaved", "grouped", "prefix")


def run_order(config: dict[str, object], order: str, out: Path, log: Path) -> dict[str, object]:
    before = len(log.read_text(errors="replace"))
    started = time.perf_counter()
    run_dir = run_experiment(build_config({**config, "order": order, "out": str(out / order)}))
    wall = time.perf_counter() - started
    hits = prefix_hits(log.read_text(errors="replace")[before:])
    with sqlite3.connect(run_dir / "run.db") as db:
        rows = db.execute("SELECT item_id, outcome, usage_prompt_tokens, status FROM items").fetchall()
        meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
    sent = sum(row[2] or 0 for row in rows)
    return {
        "order": order,
        "wall_s": wall,
        "sent": sent,
        "evaluated": sent - sum(hits),
        "cached": sum(hits),
        "rows_cached": load_summary(run_dir).model_dump()["tokens"]["cached"],
        "outcomes": {row[0]: row[1] for row in rows},
        "errors": sum(row[3] != "ok" for row in rows),
        "meta_order": meta.get("order"),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "examples" / "quick-v1.yaml")
    parser.add_argument("--concurrency", type=int, default=4, help="calls in flight (the default 4)")
    parser.add_argument("--lengths", help="comma-separated lengths instead of the config's")
    parser.add_argument("--limit", type=int, help="cases per task instead of the config's")
    parser.add_argument("--max-tokens", type=int, help="reply tokens instead of the config's")
    parser.add_argument("--threads", type=int, help="server threads (default: one per core)")
    parser.add_argument("--server-cache", type=int, default=0, metavar="MB", help="server --cache size")
    parser.add_argument("--orders", default=",".join(ORDERS), help="comma-separated, run in this order")
    parser.add_argument("--keep", type=Path, help="write the run folders here instead of a temporary one")
    arguments = parser.parse_args()
    model = bundled_model_path()
    base = read_config_file(arguments.config, arguments.config.parent)
    if arguments.lengths:
        base["lengths"] = [int(length) for length in arguments.lengths.split(",")]
    if arguments.limit:
        base["limit"] = arguments.limit
    if arguments.max_tokens:
        base["generation"] = {**base.get("generation", {}), "max_tokens": arguments.max_tokens}
    orders = arguments.orders.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        folder = arguments.keep or scratch
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        log = out / "server.log"
        n_ctx = max(base["lengths"]) + 256
        with served(model, log, n_ctx, arguments.threads, arguments.server_cache) as base_url:
            config = {
                **base,
                "model": f"openai/{SERVED_NAME}",
                "remote": {"base_url": base_url, "tokenizer": str(model), "timeout_s": 600,
                           "params": {"repeat_penalty": 1.0},
                           # one call at a time: each row's cached tokens counted from the log too
                           **({"server_log": str(log)} if arguments.concurrency == 1 else {})},
                "cache": {"enabled": False},
                "limits": {"openai": {"concurrency": arguments.concurrency}},
            }  # fmt: skip
            results = [run_order(config, order, out, log) for order in orders]
            with sqlite3.connect(out / orders[0] / "run.db") as db:
                (tokens,) = db.execute("SELECT value FROM meta WHERE key = 'tokens'").fetchone()
    bound = json.loads(tokens)["lower_bound"]
    cache = f", server --cache {arguments.server_cache} MB" if arguments.server_cache else ""
    print(f"{arguments.config.name} lengths {base['lengths']}{cache}: trie lower bound {bound:,} tokens")
    print(f"{'order':<12} {'sent':>8} {'evaluated':>10} {'x bound':>8} {'cached':>7} {'wall s':>7} err same")
    reference = results[-1]["outcomes"]
    for result in results:
        sent, evaluated = int(result["sent"]), int(result["evaluated"])  # type: ignore[call-overload]
        equal = sum(outcome == reference.get(item) for item, outcome in result["outcomes"].items())
        same = f"{equal}/{len(reference)}"
        print(
            f"{result['order']:<12} {sent:>8,} {evaluated:>10,} {evaluated / bound:>8.2f} "
            f"{int(result['cached']) / sent:>7.0%} {float(result['wall_s']):>7.1f} "  # type: ignore[call-overload]
            f"{result['errors']:>6}  {same}"
        )
        print(
            f"  {result['meta_order']}; the rows' cached tokens sum to "
            f"{'unknown' if result['rows_cached'] is None else format(result['rows_cached'], ',')}; "
            f"load average {float(result['load']):.1f} at its end"  # type: ignore[arg-type]
        )


if __name__ == "__main__":
    main()
