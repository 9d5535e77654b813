"""Prefill speed of the bundled model under llama.cpp settings, and whether a converted copy of the
file changes answers. Run by hand:

    python benchmarks/engine_settings.py [--tokens 1000] [--repeats 3]

Times a cold prefill of one prompt (median of repeats) for batch sizes and thread counts on the
shipped Q4_1 file, then for F16 and Q8_0 copies made with llama.cpp's own quantize API, and
compares greedy answers of each copy with the shipped file on a small niah/nolima grid.

Whether batch size or threads change the shipped file's answers (the reason doctor may tune both,
``rotscope.backends.llamacpp.doctor.measure_speed``) was measured on the frozen quick grid, 2026-12-01, on
this 2-core machine: ``rotscope run`` of examples/quick-v1.yaml with ``llamacpp.n_batch`` 128, 256
and 512 at ``n_threads: 1``, and 256 at ``n_threads: 2``, compared call by call in ``run.db``:

    setting            replies equal to n_batch 256, 1 thread   outcomes equal
    n_batch 128, 1 thread          72/72                             72/72
    n_batch 512, 1 thread          72/72                             72/72
    n_batch 256, 2 threads         72/72                             72/72

(each run evaluated 15,299 prompt tokens, the 2-thread one 15,508: it was stopped and resumed;
load average 4-9 from other work. All of them give 71/72 of the outcomes recorded in
examples/quick-v1.items.tsv: item 2e1beed9a3f4dcc07cdc167b now scores ``abstained`` where the
recording says ``incorrect``, with every setting alike.)
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import statistics
import tempfile
import time
from pathlib import Path

import llama_cpp

from rotscope._util.quiet import quiet_stderr
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import build_config
from rotscope.plan.workitems import build_plan
from rotscope.types import GenerateRequest

CONVERSIONS = {"F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16, "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0}


def convert(source: Path, target: Path, ftype: int) -> None:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True
    with quiet_stderr():
        status = llama_cpp.llama_model_quantize(
            str(source).encode(), str(target).encode(), ctypes.byref(params)
        )
    if status != 0:
        raise RuntimeError(f"quantize to {target.name} failed with {status}")


def prefill_rate(path: Path, ids: list[int], n_batch: int, threads: int, repeats: int) -> float:
    with quiet_stderr():
        llama = llama_cpp.Llama(
            model_path=str(path), n_ctx=len(ids) + 64, n_batch=n_batch, n_ubatch=n_batch,
            n_threads=threads, n_threads_batch=threads, verbose=False,
        )  # fmt: skip
    rates = []
    for _ in range(repeats):
        llama.reset()
        started = time.perf_counter()
        llama.eval(ids)
        rates.append(len(ids) / (time.perf_counter() - started))
    llama.close()
    return statistics.median(rates)


def answers(path: Path) -> list[str]:
    config = build_config(
        {"tasks": ["niah", "nolima"], "limit": 4, "lengths": [300, 600], "depths": [0.0, 0.5, 1.0]}
    )
    backend = LlamaCppBackend(path, config.section(LlamaCppOptions))
    plan = build_plan(config, backend)
    backend.reserve(plan.max_prompt_tokens, config.generation.max_tokens)
    texts = []
    for item in plan.items:
        completion = asyncio.run(backend.generate(GenerateRequest((), item.prompt.token_ids, item.params)))
        texts.append(completion.text)
    backend.close()
    return texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    shipped = bundled_model_path()
    backend = LlamaCppBackend(shipped, LlamaCppOptions())
    text = (Path(llama_cpp.__file__).parent / "llama.py").read_text(encoding="utf-8")
    ids = backend.tokenizer().encode(text)[: args.tokens]
    print(f"cold prefill of {len(ids)} tokens, median of {args.repeats}:")
    for threads in (1, 2):
        for n_batch in (128, 512, 2048):
            rate = prefill_rate(shipped, ids, n_batch, threads, args.repeats)
            print(f"  Q4_1 (shipped) threads={threads} n_batch={n_batch:5d}: {rate:6.0f} tok/s")
    reference = answers(shipped)
    with tempfile.TemporaryDirectory() as folder:
        for name, ftype in CONVERSIONS.items():
            target = Path(folder) / f"smollm2-{name}.gguf"
            convert(shipped, target, ftype)
            rate = prefill_rate(target, ids, 2048, 2, args.repeats)
            same = sum(a == b for a, b in zip(answers(target), reference, strict=True))
            print(f"  {name} copy threads=2 n_batch= 2048: {rate:6.0f} tok/s; "
                  f"answers identical to Q4_1 on {same}/{len(reference)} items")  # fmt: skip


if __name__ == "__main__":
    main()
