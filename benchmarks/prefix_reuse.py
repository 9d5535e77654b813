"""Prefix reuse on the bundled model, and prompt building at 32K tokens. Run by hand:

    python benchmarks/prefix_reuse.py [--cases 4] [--lengths 512,1024,2048] [--build-only]

Three ways over one grid (cases x 5 depths x lengths, niah): grid order with the cache cleared
before every item (naive), grid order with llama.cpp's own prefix reuse, and rotscope's trie
order. For each: wall time, prompt tokens evaluated, and the token-trie lower bound. Then the
time and peak memory of building and verifying 1,000 prompts of 32K tokens (no model calls).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time

from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import build_config
from rotscope.plan.schedule import prefix_order
from rotscope.plan.workitems import build_plan
from rotscope.types import GenerateRequest, WorkItem


def _run(items: list[WorkItem], backend: LlamaCppBackend) -> tuple[float, int, list[str]]:
    started = time.perf_counter()
    evaluated = 0
    responses = []
    for item in items:
        request = GenerateRequest(item.prompt.messages, item.prompt.token_ids, item.params)
        completion = asyncio.run(backend.generate(request))
        assert completion.error is None, completion.error
        evaluated += completion.prompt_tokens - completion.cached_tokens
        responses.append(completion.text)
    return time.perf_counter() - started, evaluated, responses


def reuse(cases: int, lengths: list[int]) -> None:
    config = build_config(
        {"tasks": ["niah"], "limit": cases, "lengths": lengths, "controls": False,
         "depths": ["beginning", "early-middle", "midpoint", "late-middle", "end"]}
    )  # fmt: skip
    path = bundled_model_path()
    plan = build_plan(config, LlamaCppBackend(path, config.section(LlamaCppOptions)))
    grid = plan.items
    trie = [grid[i] for i in prefix_order([item.prompt.token_ids for item in grid])]
    print(
        f"grid: {len(grid)} items, naive prefill {plan.naive_prefill:,} tokens, "
        f"lower bound {plan.lower_bound:,}"
    )
    results = {}
    for name, items, cache in (("naive (cold, grid order)", grid, False),
                               ("engine reuse (grid order)", grid, True),
                               ("rotscope (trie order)", trie, True)):  # fmt: skip
        backend = LlamaCppBackend(
            path, config.section(LlamaCppOptions).model_copy(update={"prefix_cache": cache})
        )
        backend.reserve(plan.max_prompt_tokens, config.generation.max_tokens)
        wall, evaluated, responses = _run(items, backend)
        backend.close()
        results[name] = (wall, dict(zip((i.item_id for i in items), responses, strict=True)))
        print(f"{name:28s} wall {wall:7.1f} s  evaluated {evaluated:7,} tokens "
              f"({evaluated / plan.lower_bound:.2f}x lower bound)")  # fmt: skip
    naive_wall, naive_answers = results["naive (cold, grid order)"]
    for name, (wall, answers) in results.items():
        same = answers == naive_answers
        print(f"{name:28s} {wall / naive_wall:.2f}x naive wall time; answers identical to cold: {same}")


def build(prompts: int, length: int) -> None:
    config = build_config(
        {"tasks": ["niah", "nolima"], "lengths": [length], "controls": False,
         "depths": [round(i / 31, 4) for i in range(32)], "length_tolerance": 0.01}
    )  # fmt: skip
    backend = LlamaCppBackend(bundled_model_path(), config.section(LlamaCppOptions))
    backend.context_window = max(backend.context_window, length + 64)  # building only, no model call
    started = time.perf_counter()
    plan = build_plan(config, backend)
    wall = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    built = len(plan.items)
    print(
        f"built and verified {built} prompts of {length:,} tokens in {wall:.1f} s ({wall / built * 1000:.1f} "
        f"ms each), {len(plan.rejected)} rejected, peak RSS {peak_mib:,.0f} MiB"
    )
    if built < prompts:
        print(f"(the grid gives {built} prompts; {prompts} would take about {wall / built * prompts:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--lengths", default="512,1024,2048")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    if not args.build_only:
        reuse(args.cases, [int(x) for x in args.lengths.split(",")])
    build(1000, 32_000)


if __name__ == "__main__":
    main()
