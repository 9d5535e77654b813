"""quick-v1 through ``serve/NAME`` on two real ``llama-server`` replicas of the bundled model.
Run by hand (it takes minutes on 2 cores):

    python benchmarks/serve_replicas.py [--replicas 2] [--threads 1] [--kill-after N] [--limit N]

Starts the replicas (the cached build, ``rotscope.backends.llamacpp.server_build``; fixed threads and
batch 256, one slot each, flash attention and the extra weight buffers off as in the in-process
engine's ``extra_buffers: off``), runs examples/quick-v1.yaml with ``model: serve/smollm2`` and
``serve.tokenizer`` the bundled GGUF, and prints:

- whether every prompt's token ids equal the in-process llama.cpp engine's plan of quick-v1;
- how many outcomes differ from the reference outcomes (examples/quick-v1.items.tsv, with the
  per-CPU allow-list ``tests/integration/test_quick_v1.py`` keeps);
- the prompt tokens the servers evaluated (reported prompt minus cached tokens, summed over rows)
  against the trie lower bound, with affinity (measured), and what a round-robin balancer without
  affinity would evaluate on the same replicas (simulated: the stored order dealt call by call,
  each one-slot replica keeping only its last prompt, ``plan.schedule.cache_evaluated``);
- with ``--kill-after N``: replica 2 is killed once N rows are done; the run goes on, then
  ``--resume``, and the rows must be every planned call exactly once, all ok.

Results: benchmarks/results/serve_replicas.md.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.test_quick_v1 import KERNEL_CHANGES, recorded  # noqa: E402
from tests.support.llama_servers import SERVED_NAME, Served, llama_servers  # noqa: E402

from rotscope.backends import create_backend  # noqa: E402
from rotscope.backends.llamacpp.backend import bundled_model_path  # noqa: E402
from rotscope.config.experiment import build_config, read_config_file  # noqa: E402
from rotscope.execution.workflows.runner import resume_experiment, run_experiment  # noqa: E402
from rotscope.plan.schedule import cache_evaluated, prefill_bounds  # noqa: E402
from rotscope.plan.workitems import build_plan  # noqa: E402

CONFIG = ROOT / "examples" / "quick-v1.yaml"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def kill_after(out: Path, rows: int, replica: Served) -> None:
    while replica.process.poll() is None:
        try:
            with sqlite3.connect(out / "run.db") as db:
                if db.execute("SELECT count(*) FROM items WHERE status = 'ok'").fetchone()[0] >= rows:
                    replica.kill()
                    print(f"killed {replica.url} after {rows} rows", flush=True)
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--kill-after", type=int)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    import llama_cpp

    model = bundled_model_path()
    local_data: dict[str, Any] = read_config_file(CONFIG)
    if args.limit:
        local_data["limit"] = args.limit
    local_config = build_config(local_data)
    local_plan = build_plan(local_config, create_backend(local_config))
    with (
        tempfile.TemporaryDirectory() as folder,
        llama_servers(model, args.replicas, Path(folder), threads=args.threads, n_ctx=1280) as servers,
    ):
        out = Path(folder) / "run"
        data = {
            **local_data,
            "model": f"serve/{SERVED_NAME}",
            "serve": {"tokenizer": str(model), "base_url": ",".join(s.url for s in servers)},
            "cache": {"enabled": False},
            "out": str(out),
        }
        config = build_config(data)
        plan = build_plan(config, create_backend(config))
        same_ids = sorted((text_digest(i.prompt.text), i.prompt.token_ids) for i in plan.items) == sorted(
            (text_digest(i.prompt.text), i.prompt.token_ids) for i in local_plan.items
        )
        killer = None
        if args.kill_after is not None:
            killer = threading.Thread(
                target=kill_after, args=(out, args.kill_after, servers[-1]), daemon=True
            )
            killer.start()
        started = time.perf_counter()
        run_experiment(config)
        wall = time.perf_counter() - started
        if killer is not None:
            resume_experiment(out)
        with sqlite3.connect(out / "run.db") as db:
            db.row_factory = sqlite3.Row
            rows = [dict(r) for r in db.execute("SELECT * FROM items ORDER BY plan_order")]
    by_digest = {text_digest(i.prompt.text): i for i in plan.items}
    expected = {digest: outcome for _, digest, outcome in recorded()}
    system = llama_cpp.llama_print_system_info().decode()
    allowed = {
        item_id: o for feature, c in KERNEL_CHANGES.items() if feature in system for item_id, o in c.items()
    }
    local_ids = {text_digest(i.prompt.text): i.item_id for i in local_plan.items}
    for digest, item_id in local_ids.items():
        if item_id in allowed:
            expected[digest] = allowed[item_id]
    differ = [r for r in rows if expected.get(r["prompt_digest"]) not in (None, r["outcome"])]
    ids = [by_digest[r["prompt_digest"]].prompt.token_ids for r in rows]
    naive, lower = prefill_bounds(ids)
    evaluated = sum(r["usage_prompt_tokens"] - (r["cached_tokens"] or 0) for r in rows)
    round_robin = sum(
        cache_evaluated(ids, list(range(k, len(ids), args.replicas))) for k in range(args.replicas)
    )
    print(f"calls {len(rows)}, all ok: {all(r['status'] == 'ok' for r in rows)}, wall {wall:.1f} s")
    print(f"prompt ids equal to the in-process plan: {same_ids}")
    compared = sum(r["prompt_digest"] in expected for r in rows)
    print(f"outcomes differing from the reference (allow-list applied): {len(differ)} of {compared} compared")
    print(f"trie lower bound {lower:,}, naive {naive:,} prompt tokens")
    print(f"evaluated with affinity (measured): {evaluated:,} = {evaluated / lower:.3f} x bound")
    print(f"round robin without affinity (simulated): {round_robin:,} = {round_robin / lower:.3f} x bound")


if __name__ == "__main__":
    main()
