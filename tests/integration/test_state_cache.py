"""The llama.cpp state cache: a prompt whose prefix was evaluated before, but not just before,
starts from the saved state, and its answer is the one a cold engine gives."""

from __future__ import annotations

import asyncio

from rotscope.backends.llamacpp.backend import LlamaCppBackend, bundled_model_path
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.types import GenerateRequest, GenerationParams


def _answers(options: LlamaCppOptions, prompts: list[list[int]]) -> list[tuple[str, int]]:
    backend = LlamaCppBackend(bundled_model_path(), options)
    backend.reserve(max(len(p) for p in prompts), 8)
    try:
        results = []
        for ids in prompts:
            completion = asyncio.run(
                backend.generate(GenerateRequest((), tuple(ids), GenerationParams(max_tokens=8)))
            )
            assert completion.error is None
            results.append((completion.text, completion.cached_tokens))
        return results
    finally:
        backend.close()


def test_state_cache_restores_a_non_adjacent_prefix_without_changing_answers() -> None:
    backend = LlamaCppBackend(bundled_model_path(), LlamaCppOptions())
    tokenizer = backend.tokenizer()
    shared = tokenizer.encode("Ledger of the Tessaly depot, shelf by shelf. " * 12)
    first = shared + tokenizer.encode(" Which shelf holds the blue ledger?")
    other = tokenizer.encode("A different prompt that shares nothing.")
    second = shared + tokenizer.encode(" Who keeps the depot keys?")
    prompts = [first, other, second]

    with_states = _answers(LlamaCppOptions(state_cache_mb=256), prompts)
    live_cache_only = _answers(LlamaCppOptions(), prompts)
    cold = _answers(LlamaCppOptions(prefix_cache=False), prompts)

    assert with_states[2][1] >= len(shared) - 1  # restored from the state saved after the first prompt
    assert live_cache_only[2][1] == 0  # the live cache held the unrelated prompt
    assert all(cached == 0 for _, cached in cold)
    assert [text for text, _ in with_states] == [text for text, _ in cold]
