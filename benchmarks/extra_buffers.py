"""What llama.cpp's extra weight buffers (CPU repack, AMX) buy on this machine. Run by hand:

    python benchmarks/extra_buffers.py [--tokens 900] [--repeats 3] [--model PATH.gguf]

Loads the model in an engine worker with extra buffers on, then off, and times a cold prefill of
the same prompt (median of repeats) and the decode of 32 tokens from it. With extra buffers on it
first asks the probe, so on a CPU where they crash (AMX) it says so instead of crashing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path

from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.extra_buffers import extra_buffers_verdict
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.execution.executors.worker import WorkerBackend
from rotscope.tokenizers.gguf import file_digest
from rotscope.types import GenerateRequest, GenerationParams

TEXT = "The harbor office keeps a ledger of every vessel that enters after dusk, with the pilot's name.\n"


def measure(path: Path, mode: str, tokens: int, repeats: int) -> tuple[float, float]:
    engine = LlamaCppBackend(path, LlamaCppOptions(extra_buffers=mode))  # type: ignore[arg-type]
    ids = tuple(engine.tokenizer().encode(TEXT * (tokens // 10))[:tokens])
    worker = WorkerBackend(engine, max_crashes=1)
    try:
        worker.reserve(len(ids), 32)
        prefill: list[float] = []
        decode: list[float] = []
        asyncio.run(worker.generate(GenerateRequest((), ids[:8], GenerationParams(max_tokens=1))))  # load
        for _ in range(repeats):
            worker.clear_cache()
            cold = asyncio.run(worker.generate(GenerateRequest((), ids, GenerationParams(max_tokens=1))))
            warm = asyncio.run(worker.generate(GenerateRequest((), ids, GenerationParams(max_tokens=32))))
            if cold.error or warm.error:
                raise SystemExit(f"extra_buffers={mode}: {cold.error or warm.error}")
            prefill.append(len(ids) / cold.latency_s)
            decode.append(warm.completion_tokens / warm.latency_s)
    finally:
        worker.close()
    return statistics.median(prefill), statistics.median(decode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=900)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", type=Path, default=None)
    args = parser.parse_args()
    path = args.model or bundled_model_path()
    verdict = extra_buffers_verdict(path, file_digest(path))
    state = "safe" if verdict.safe else "unsafe"
    print(f"probe: {state}: {verdict.reason}; extra buffers used: {verdict.buffer_types or 'none'}")
    for mode in ("on", "off") if verdict.safe else ("off",):
        prefill, decode = measure(path, mode, args.tokens, args.repeats)
        print(f"extra_buffers={mode}: prefill {prefill:,.0f} tokens/s, decode {decode:,.0f} tokens/s")


if __name__ == "__main__":
    main()
