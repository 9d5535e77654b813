"""How far a real tokenizer's count of a prompt is from rotscope's approximate count of it: the
measurement behind the delivery check's plausibility bound for approximate counts
(``rotscope.execution.calls.delivery.APPROXIMATE_RATIO``). Run by hand:

    python benchmarks/approximate_counts.py [--lengths 256,512,...] [--limit 3]

Plans niah prompts under the approximate tokenizer (an OpenAI-compatible backend with no
``remote.tokenizer``) on each filler kind rotscope uses (code, prose, the reading log), then counts
each prompt as a server would: the bundled model's tokenizer with its chat template, and tiktoken's
cl100k_base / o200k_base when they are already in the local cache (nothing is downloaded).
Prints the ratio real / approximate per filler, length and tokenizer, and the range over all.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rotscope.backends import create_backend
from rotscope.backends.llamacpp.backend import bundled_model_path
from rotscope.config.experiment import build_config
from rotscope.errors import BadInput
from rotscope.plan.workitems import build_plan
from rotscope.tokenizers.local import LlamaCppTokenizer
from rotscope.tokenizers.remote import TiktokenTokenizer, render_plain

REPO = Path(__file__).resolve().parents[1]
FILLERS: dict[str, dict[str, Any]] = {
    "code": {"kind": "code"},
    "prose": {"kind": "text", "glob": str(REPO / "**" / "*.md"), "allow_repeat": True},
    "readinglog": {"kind": "readinglog"},
}


def counters() -> dict[str, Any]:
    found: dict[str, Any] = {}
    bundled = LlamaCppTokenizer(bundled_model_path())
    found["bundled"] = lambda messages: len(bundled.encode(bundled.render_chat(messages), special=True))
    for name in ("cl100k_base", "o200k_base"):
        try:
            encoding = TiktokenTokenizer.cached(name)
        except (BadInput, ImportError) as error:
            print(f"tiktoken:{name} skipped ({error})")
            continue
        found[name] = lambda messages, e=encoding: e.count(render_plain(messages))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="256,512,1024,2048,4096,8192")
    parser.add_argument("--limit", type=int, default=3)
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    count = counters()
    ratios: list[float] = []
    for filler, section in FILLERS.items():
        config = build_config(
            {
                "model": "openai/approximate",
                "remote": {"base_url": "http://127.0.0.1:9/v1"},
                "tasks": ["niah", "competitive"],
                "limit": args.limit,
                "lengths": lengths,
                "depths": [0.0, 0.5, 1.0],
                "filler": section,
            }
        )
        plan = build_plan(config, create_backend(config))
        for length in lengths:
            items = [item for item in plan.items if item.layout.length_tokens == length]
            for name, counter in count.items():
                found = [counter(item.prompt.messages) / len(item.prompt.token_ids) for item in items]
                ratios.extend(found)
                spread = f"{min(found):.3f}..{max(found):.3f}"
                print(f"{filler:10} {length:6} {name:12} n={len(found):3} ratio {spread}")
    print(f"all: {len(ratios)} prompts, real / approximate {min(ratios):.3f}..{max(ratios):.3f}")


if __name__ == "__main__":
    main()
