"""The bundled model's engines on the frozen quick grid (examples/quick-v1.yaml). Run by hand:

    python benchmarks/hf_vs_llamacpp.py [--repeats 3] [--engines q4_1,f16,q8_0,hf] [--threads 2]

Engines: llama.cpp on the shipped Q4_1 file and on F16 and Q8_0 copies made once with llama.cpp's
own quantize API (``engine_settings.convert``), and the hf/ backend (transformers, the same GGUF
dequantized to fp32). Each engine runs through its rotscope backend, in trie order with prefix
reuse, as a run does:

- prefill: every prompt with ``max_tokens=1`` (its prefill and one argmax), evaluated tokens
  (prompt minus cached) per second, best and spread of ``--repeats`` passes, the cache cleared
  before each pass;
- grid: every item with the grid's own generation settings (32 tokens, greedy): model time (the
  sum of the calls' latencies, what ``rotscope show`` reports), and answers identical to the
  shipped file's in llama.cpp.

It also counts the quick-v1 prompts whose ids the hf/ plan gives as the llama.cpp plan does, and
whose text transformers' own tokenizer (converted from the GGUF) encodes to the same ids. Other
processes share this machine: the 1-minute load average is printed with every measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_settings import CONVERSIONS, convert

from rotscope.backends.hf.backend import HfBackend
from rotscope.backends.hf.options import HfOptions
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import load_config
from rotscope.plan.schedule import prefix_order
from rotscope.plan.workitems import build_plan
from rotscope.types import GenerateRequest, GenerationParams, WorkItem

QUICK_V1 = Path(__file__).resolve().parents[1] / "examples" / "quick-v1.yaml"
Engine = Callable[[], Any]


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def calls(
    backend: Any, items: list[WorkItem], params: GenerationParams | None
) -> tuple[float, int, list[str]]:
    """Model seconds, evaluated prompt tokens and answers of ``items`` in this order."""
    seconds, evaluated, texts = 0.0, 0, []
    for item in items:
        request = GenerateRequest((), item.prompt.token_ids, params or item.params)
        completion = asyncio.run(backend.generate(request))
        if completion.error:
            raise RuntimeError(completion.error)
        seconds += completion.latency_s
        evaluated += completion.prompt_tokens - completion.cached_tokens
        texts.append(completion.text)
    return seconds, evaluated, texts


def measure(
    name: str, make: Engine, items: list[WorkItem], repeats: int, reference: list[str] | None
) -> list[str]:
    started = time.perf_counter()
    backend = make()
    backend.reserve(max(len(i.prompt.token_ids) for i in items), 32)
    calls(backend, items[:1], GenerationParams(max_tokens=1))  # loads the model
    print(f"{name}: loaded in {time.perf_counter() - started:.1f} s ({load()})", flush=True)
    rates = []
    for _ in range(repeats):
        backend.clear_cache()
        before = load()
        seconds, evaluated, _ = calls(backend, items, GenerationParams(max_tokens=1))
        rates.append(evaluated / seconds)
        print(f"  prefill: {evaluated} tokens evaluated in {seconds:.1f} s = {rates[-1]:.0f} tok/s "
              f"({before}, after {load()})", flush=True)  # fmt: skip
    print(f"  prefill best {max(rates):.0f} tok/s, spread {min(rates):.0f}-{max(rates):.0f}")
    backend.clear_cache()
    before = load()
    seconds, evaluated, texts = calls(backend, items, None)
    agree = sum(a == b for a, b in zip(texts, reference or texts, strict=True))
    same = "" if reference is None else f", answers identical to llama.cpp Q4_1 on {agree}/{len(items)}"
    print(f"  grid: model time {seconds:.1f} s for {len(items)} items, {evaluated} prompt tokens evaluated"
          f"{same} ({before}, after {load()})", flush=True)  # fmt: skip
    backend.close()
    return texts


def compare_ids(items: list[WorkItem]) -> None:
    from transformers import AutoTokenizer

    hf_config = load_config(QUICK_V1, {"model": "hf/bundled"})
    hf_plan = build_plan(hf_config, HfBackend(bundled_model_path(), hf_config.section(HfOptions)))
    cell = {(i.case.task, i.case.case_id, i.layout, i.trial): i.prompt.token_ids for i in items}
    same = sum(
        cell.get((i.case.task, i.case.case_id, i.layout, i.trial)) == i.prompt.token_ids
        for i in hf_plan.items
    )
    path = bundled_model_path()
    converted = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
    alike = sum(
        converted(i.prompt.text, add_special_tokens=False)["input_ids"] == list(i.prompt.token_ids)
        for i in items
    )
    print(f"prompt ids: hf/ plan equal to llama.cpp plan on {same}/{len(items)} items; "
          f"transformers' tokenizer encodes {alike}/{len(items)} prompt texts to the same ids")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engines", default="q4_1,hf,f16,q8_0")
    args = parser.parse_args()
    engines = args.engines.split(",")
    config = load_config(QUICK_V1)
    shipped = bundled_model_path()
    plan = build_plan(config, LlamaCppBackend(shipped, config.section(LlamaCppOptions)))
    ids = [item.prompt.token_ids for item in plan.items]
    items = [plan.items[i] for i in prefix_order(ids)]
    print(f"quick-v1: {len(items)} items, {sum(map(len, ids))} prompt tokens, trie lower bound "
          f"{plan.lower_bound}; {args.threads} threads, {os.cpu_count()} cores")  # fmt: skip
    if "hf" in engines:
        compare_ids(items)
    llama_options = LlamaCppOptions(n_threads=args.threads)
    reference = None
    if "q4_1" in engines:
        make = lambda: LlamaCppBackend(shipped, llama_options)  # noqa: E731
        reference = measure("llama.cpp Q4_1 (shipped)", make, items, args.repeats, None)
    if "hf" in engines:
        hf_options = HfOptions(device="cpu", dtype="float32", n_threads=args.threads)
        measure(
            "hf fp32 (GGUF dequantized)",
            lambda: HfBackend(shipped, hf_options),
            items,
            args.repeats,
            reference,
        )
    with tempfile.TemporaryDirectory() as folder:
        for name, ftype in CONVERSIONS.items():
            if name.lower() not in engines:
                continue
            target = Path(folder) / f"smollm2-{name}.gguf"
            started = time.perf_counter()
            convert(shipped, target, ftype)
            print(f"converted to {name} in {time.perf_counter() - started:.1f} s "
                  f"({target.stat().st_size / 2**20:.0f} MiB)")  # fmt: skip
            make = lambda target=target: LlamaCppBackend(target, llama_options)  # noqa: E731
            measure(f"llama.cpp {name} copy", make, items, args.repeats, reference)


if __name__ == "__main__":
    main()
