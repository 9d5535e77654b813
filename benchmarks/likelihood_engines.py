"""Acceptance of issue 49's engines: the same prompt's answer log-probabilities agree between the
engines that read them (benchmarks/results/likelihood_engines.md).

    python benchmarks/likelihood_engines.py [--limit 4] [--no-hf] [--json OUT]

The prompts are the quick grid's (``examples/quick.yaml`` planned by rotscope's own planner on the
bundled SmolLM2 GGUF, ``limit`` cases × its three lengths) and their readings (``likelihood_request``:
each answer form with the evidence's lead-in, tokenized by the model's tokenizer). Each is read by:

- ``llamacpp``: the in-process llama.cpp backend, the reference;
- ``worker``: the same engine in its worker process (``executors.worker.WorkerBackend``);
- ``serve-vllm``: ``serve/NAME`` against a stub server that answers in vLLM's ``prompt_logprobs``
  shape with llama.cpp's own numbers, the reference's reading of the prompt and form its ids are
  (every other position a value that is no form's): this checks the request, the parse and the
  positions end to end, not vLLM's kernels. No real server returns prompt-token log-probabilities here:
  llama-server refuses ``echo`` and its Python counterpart (llama-cpp-python's server) takes no
  token ids and shifts its echoed log-probabilities by a token;
- ``llamacpp-resplit``: the same stub computing the last ``STUB_TAIL`` tokens of each prompt it is
  sent instead, so the prompt's last tokens go one at a time rather than in the prompt's batch:
  how far llama.cpp's own numbers move with the evaluation path (reported, no tolerance);
- ``hf``: transformers on the same GGUF, its Q4_1 weights dequantised to float32, so it is not the
  same arithmetic: a looser tolerance.

Printed: per engine, the tokens compared, the largest |Δ| of one token's log-probability and of a
row's answer log-probability (the scored tokens summed, the best form, as the store keeps it)
against the reference, and whether each is within its tolerance. It is not a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from tests.support.completions_server import CompletionsServer  # noqa: E402

from rotscope.backends import create_backend  # noqa: E402
from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path  # noqa: E402
from rotscope.config.experiment import load_config  # noqa: E402
from rotscope.execution.calls.likelihood import likelihood_columns, likelihood_request  # noqa: E402
from rotscope.execution.executors.worker import WorkerBackend  # noqa: E402
from rotscope.plan.workitems import build_plan  # noqa: E402
from rotscope.types import Likelihood, LikelihoodRequest  # noqa: E402

QUICK = REPO / "examples" / "quick.yaml"
STUB_TAIL = 32
"""The stub computes the last this many positions of each prompt it is sent (every form is shorter)."""
TOLERANCE = {"worker": 1e-6, "serve-vllm": 1e-9, "hf": 0.5}
"""Largest |Δ| in nats allowed per token and per row. The worker runs the very engine on the very
requests: equal up to float noise; the stub sends the reference's own numbers back through JSON.
transformers on dequantised weights runs other arithmetic than llama.cpp's quantised kernels: half
a nat, set after the first run measured how far llama.cpp's own numbers move with the evaluation
path alone (``llamacpp-resplit``)."""


def requests(limit: int) -> tuple[list[LikelihoodRequest], Any]:
    config = load_config(QUICK, {"limit": limit, "model": "bundled"})
    backend = create_backend(config)
    plan = build_plan(config, backend)
    tokenizer = backend.tokenizer()
    found = [likelihood_request(item, tokenizer) for item in plan.items]
    return [request for request in found if request is not None], config


def read_all(engine: Any, wanted: list[LikelihoodRequest]) -> list[Likelihood]:
    longest_form = max(len(form) for request in wanted for form in request.continuations)
    engine.reserve(max(len(request.token_ids) for request in wanted), longest_form + STUB_TAIL)

    async def run() -> list[Likelihood]:
        return [await engine.likelihood(request) for request in wanted]

    read = asyncio.run(run())
    failed = [r.error for r in read if r.error is not None]
    if failed:
        raise SystemExit(f"{type(engine).__name__}: {failed[0]}")
    return read


def reference_values(wanted: list[LikelihoodRequest], reference: list[Likelihood]) -> Any:
    """The stub's log-probability of each position of the ``ids`` it is sent: the reference's
    reading where they are a known prompt and form, ``-50.0`` (no form's value) elsewhere."""
    known = {
        (*request.token_ids, *form): (len(request.token_ids), values)
        for request, read in zip(wanted, reference, strict=True)
        for form, values in zip(request.continuations, read.token_logprobs, strict=True)
    }

    def values(ids: list[int]) -> list[float | None]:
        prompt, form = known[tuple(ids)]
        return [None] + [-50.0] * (prompt - 1) + list(form)

    return values


def resplit_values(engine: LlamaCppBackend) -> Any:
    """llama.cpp's log-probability of the last ``STUB_TAIL`` positions of the ``ids``, read in a
    separate engine after the rest (so the prompt's last tokens go one at a time)."""

    def values(ids: list[int]) -> list[float | None]:
        tail = min(STUB_TAIL, len(ids) - 1)
        read = engine._likelihood(LikelihoodRequest(tuple(ids[:-tail]), (tuple(ids[-tail:]),)))
        if read.error is not None:
            raise RuntimeError(read.error)
        return [None] * (len(ids) - tail) + list(read.token_logprobs[0])

    return values


def serve_reads(config: Any, wanted: list[LikelihoodRequest], values: Any) -> list[Likelihood]:
    from rotscope.backends.serve.backend import ServeBackend
    from rotscope.backends.serve.options import ServeOptions
    from rotscope.config.experiment import build_config

    server = CompletionsServer(kind="vllm", position_logprobs=values).start()
    try:
        served = build_config(
            {
                "model": "serve/smollm2",
                "serve": {
                    "tokenizer": str(bundled_model_path()),
                    "kind": "vllm",
                    "base_url": server.base_url,
                },
            }
        )
        backend = ServeBackend("smollm2", served.section(ServeOptions), [server.base_url])
        return read_all(backend, wanted)
    finally:
        server.stop()


def compare(
    reference: list[Likelihood], other: list[Likelihood], wanted: list[LikelihoodRequest]
) -> dict[str, Any]:
    tokens = rows = 0
    token_delta = row_delta = 0.0
    for ref, read, request in zip(reference, other, wanted, strict=True):
        for ref_form, form in zip(ref.token_logprobs, read.token_logprobs, strict=True):
            assert len(ref_form) == len(form)
            tokens += len(form)
            token_delta = max([token_delta, *(abs(a - b) for a, b in zip(ref_form, form, strict=True))])
        ref_row = likelihood_columns(ref, request.scored_from)["answer_logprob"]
        row = likelihood_columns(read, request.scored_from)["answer_logprob"]
        assert isinstance(ref_row, float) and isinstance(row, float)
        rows += 1
        row_delta = max(row_delta, abs(ref_row - row))
    return {"rows": rows, "tokens": tokens, "max_token_delta": token_delta, "max_row_delta": row_delta}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--no-hf", action="store_true", help="skip transformers (its GGUF load is slow)")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    options = parser.parse_args()

    wanted, config = requests(options.limit)
    reference_engine = create_backend(config)
    reference = read_all(reference_engine, wanted)
    reference_engine.close()
    results: dict[str, Any] = {
        "prompts": len(wanted),
        "prompt_tokens": [min(len(r.token_ids) for r in wanted), max(len(r.token_ids) for r in wanted)],
        "forms": sum(len(r.continuations) for r in wanted),
        "reference_answer_probability": [
            round(math.exp(likelihood_columns(r, q.scored_from)["answer_logprob"]), 3)
            for r, q in zip(reference, wanted, strict=True)
        ],
    }
    worker = WorkerBackend(create_backend(config))
    try:
        results["worker"] = compare(reference, read_all(worker, wanted), wanted)
    finally:
        worker.close()
    results["serve-vllm"] = compare(
        reference, serve_reads(config, wanted, reference_values(wanted, reference)), wanted
    )
    resplit = create_backend(config)
    assert isinstance(resplit, LlamaCppBackend)
    resplit.reserve(max(len(request.token_ids) for request in wanted), 2 * STUB_TAIL)
    try:
        results["llamacpp-resplit"] = compare(
            reference, serve_reads(config, wanted, resplit_values(resplit)), wanted
        )
    finally:
        resplit.close()
    if not options.no_hf:
        hf = create_backend(load_config(QUICK, {"limit": options.limit, "model": "hf/bundled"}))
        results["hf"] = compare(reference, read_all(hf, wanted), wanted)
        hf.close()
    for engine, tolerance in TOLERANCE.items():
        if engine in results:
            found = results[engine]
            found["tolerance"] = tolerance
            found["within"] = found["max_token_delta"] <= tolerance and found["max_row_delta"] <= tolerance
    print(json.dumps(results, indent=2))
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
