"""Past the bundled model's 8K window: plan, verify and run grids of 128K and 1M tokens end to end
against an OpenAI-compatible stub server that answers as ``fake/lexical`` (``tests/support/chat_server.py``),
through ``openai/stub --base-url`` with a local tokenizer of unbounded window. Run by hand:

    python benchmarks/long_context.py [--lengths 131072,1048576] [--depths 0.5] [--limit 1]
        [--tokenizer-dir DIR] [--profile FILE]

The tokenizer is the bundled SmolLM2's vocabulary and chat template saved as a ``tokenizer.json``
folder by transformers (``gguf_file=``; made once into ``--tokenizer-dir``): a remote model's
``tokenizer.json`` declares no window, so rotscope plans to any length. The stub counts each prompt
with the same tokenizer and keeps a prefix cache of its last 4 prompts, reporting the prefix it
shares as cached tokens, so the prompt tokens it evaluated can be set against the trie's lower
bound (what a perfect prefix cache would evaluate).

Each length runs in a child process of its own, so its peak memory (``ru_maxrss``) is rotscope's
own (the stub runs in the parent).
Printed per length: calls, the planning time (backend, corpus, every prompt rendered and verified),
the wall time of the whole run, peak memory, prompt tokens sent, evaluated and the lower bound.

Measured 2026-12-01 on the 2-core machine under a load average of 15-18 (other jobs), niah with
code filler (the standard library), depths 0, 0.5, 1 and one case (4 calls a length; the one
``incorrect`` is the string matcher preferring a code line to the needle):

    length     calls  ok  plan s  calls s  wall s  peak MiB  sent tokens  evaluated  lower bound
      131,072      4   4    19.4     16.7    41.4       320      524,288    327,728      327,728
    1,048,576      4   4   112.1     87.9   218.1       987    4,194,304  2,621,487    2,621,487

Evaluated tokens equal the trie bound (1.00x) at both lengths. At 1M, planning's time goes to the
``tokenizers`` encode of the corpus (55 s of 112, one call, in Rust) and the walk of the standard
library's files (11 s); rotscope's own Python was cut from about 20 s to 5 s (a loop per character
in the shared-text count, a ``piece()`` call per corpus token, arrays made for every prefix
comparison). The peak memory is that same encode: ``tokenizers`` holds each token's string and
offsets, so 1.9M corpus tokens take about 900 MiB while they are encoded (measured alone: 85 ->
1,018 MiB). A first run with the default 120 s timeout had retried calls, whose repeats the stub
then served from its cache; the run sets ``timeout_s: 900``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.chat_server import ChatServer  # noqa: E402

from rotscope.config.experiment import build_config  # noqa: E402
from rotscope.execution.workflows.runner import run_experiment  # noqa: E402
from rotscope.store import RunStore  # noqa: E402
from rotscope.tokenizers.remote import HFTokenizer  # noqa: E402
from rotscope.types import Completion, WorkItem  # noqa: E402

DEFAULT_TOKENIZER_DIR = Path(tempfile.gettempdir()) / "rotscope-smollm2-tokenizer"


def tokenizer_folder(folder: Path) -> Path:
    """The bundled model's tokenizer as a ``tokenizer.json`` folder (made once, offline)."""
    if not (folder / "tokenizer.json").is_file():
        import os

        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import AutoTokenizer

        from rotscope.backends.llamacpp.backend import bundled_model_path

        gguf = bundled_model_path()
        AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(folder))
    return folder


class Timing:
    """A reporter that notes when planning ended and calls began and ended."""

    def __init__(self) -> None:
        self.planned_at = self.started_at = self.finished_at = 0.0
        self.planned_line = ""

    def start(self, items: int, prompt_tokens: int) -> None:
        self.started_at = time.perf_counter()

    def advance(self, item: WorkItem, completion: Completion) -> None:
        return None

    def finish(self) -> None:
        self.finished_at = time.perf_counter()

    def notice(self, message: str) -> None:
        if message.startswith("planned "):
            self.planned_at = time.perf_counter()
            self.planned_line = message


def experiment(
    length: int, depths: list[float], limit: int, base_url: str, tokenizer: Path, out: Path
) -> Any:
    return build_config(
        {
            "name": f"long-{length}",
            "model": "openai/stub",
            "remote": {
                "base_url": base_url,
                "tokenizer": str(tokenizer / "tokenizer.json"),
                "timeout_s": 900,
            },
            "tasks": ["niah"],
            "lengths": [length],
            "depths": depths,
            "limit": limit,
            "generation": {"max_tokens": 16},
            "cache": {"enabled": False},
            "out": str(out),
        }
    )


def stub_server(tokenizer: Path) -> ChatServer:
    """A fresh stub (empty prefix cache) counting with ``tokenizer`` and its chat template."""
    counter = HFTokenizer(tokenizer / "tokenizer.json")
    return ChatServer(tokenize=lambda messages: counter.encode(counter.render_chat(messages))).start()


def one_length(
    length: int, depths: list[float], limit: int, tokenizer: Path, base_url: str, profile: str | None
) -> dict[str, Any]:
    """Plan, verify and run one length against the stub at ``base_url``; what the parent prints."""
    timing = Timing()
    with tempfile.TemporaryDirectory() as scratch:
        config = experiment(length, depths, limit, base_url, tokenizer, Path(scratch) / "run")
        began = time.perf_counter()
        if profile:
            import cProfile

            with cProfile.Profile() as profiler:
                run_dir = run_experiment(config, reporter=timing)
            profiler.dump_stats(profile)
        else:
            run_dir = run_experiment(config, reporter=timing)
        ended = time.perf_counter()
        with RunStore.read(run_dir) as store:
            rows = store.rows()
            meta = store.meta()
    bound = meta.get("tokens", {}).get("lower_bound")
    sent = sum(row["usage_prompt_tokens"] or 0 for row in rows)
    cached = sum(row["cached_tokens"] or 0 for row in rows)
    return {
        "length": length,
        "calls": len(rows),
        "ok": sum(row["status"] == "ok" for row in rows),
        "outcomes": sorted({row["outcome"] for row in rows if row["outcome"]}),
        "plan_s": round(timing.planned_at - began, 1),
        "calls_s": round(timing.finished_at - timing.started_at, 1),
        "wall_s": round(ended - began, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "prompt_tokens": sent,
        "evaluated": sent - cached,
        "lower_bound": bound,
        "planned": timing.planned_line,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="131072,1048576")
    parser.add_argument("--depths", default="0.0,0.5,1.0")
    parser.add_argument("--limit", type=int, default=1)
    parser.add_argument("--tokenizer-dir", type=Path, default=DEFAULT_TOKENIZER_DIR)
    parser.add_argument("--profile", help="write a cProfile of each length to FILE.LENGTH")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    depths = [float(depth) for depth in args.depths.split(",")]
    folder = tokenizer_folder(args.tokenizer_dir)
    if args.one:
        profile = f"{args.profile}.{args.one}" if args.profile else None
        print(json.dumps(one_length(args.one, depths, args.limit, folder, args.base_url, profile)))
        return
    print("length     calls  ok  plan s  calls s  wall s  peak MiB  sent tokens  evaluated  lower bound")
    for length in (int(value) for value in args.lengths.split(",")):
        server = stub_server(folder)  # in this process, so the child's peak memory is rotscope's
        command = [sys.executable, __file__, "--one", str(length), "--depths", args.depths,
                   "--limit", str(args.limit), "--tokenizer-dir", str(folder),
                   "--base-url", server.base_url]  # fmt: skip
        if args.profile:
            command += ["--profile", args.profile]
        try:
            child = subprocess.run(command, capture_output=True, text=True, check=False)
        finally:
            server.stop()
        if child.returncode != 0:
            print(f"{length:>9,}  failed: {child.stderr.strip().splitlines()[-1:]}")
            continue
        result = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"{length:>9,}  {result['calls']:>5}  {result['ok']:>2}  {result['plan_s']:>6}  "
            f"{result['calls_s']:>7}  {result['wall_s']:>6}  {result['peak_rss_mib']:>8}  "
            f"{result['prompt_tokens']:>11,}  {result['evaluated']:>9,}  {result['lower_bound'] or 0:>11,}"
        )
        print(f"           {result['planned']}; outcomes {', '.join(result['outcomes'])}")


if __name__ == "__main__":
    main()
