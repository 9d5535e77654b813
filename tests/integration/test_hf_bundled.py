"""hf/bundled: transformers on the bundled SmolLM2 GGUF (dequantized), offline.

Every prompt of the frozen quick experiment gets the ids the llama.cpp backend gets, and
transformers' own tokenizer converted from the same file encodes each prompt text to those ids
(so the model reads them as the tokens they are); prefix reuse gives the answers of a cold cache."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from rotscope._util.tokens import common_prefix  # noqa: E402
from rotscope.backends import create_backend  # noqa: E402
from rotscope.backends.hf.backend import HfBackend  # noqa: E402
from rotscope.backends.hf.options import HfOptions  # noqa: E402
from rotscope.backends.llamacpp.backend import bundled_model_path  # noqa: E402
from rotscope.config.experiment import load_config  # noqa: E402
from rotscope.plan.workitems import build_plan  # noqa: E402
from rotscope.types import GenerateRequest, GenerationParams, WorkItem  # noqa: E402

QUICK_V1 = Path(__file__).resolve().parents[2] / "examples" / "quick-v1.yaml"


def _by_cell(items: list[WorkItem]) -> dict[tuple[Any, ...], tuple[int, ...]]:
    return {(i.case.task, i.case.case_id, i.layout, i.trial): i.prompt.token_ids for i in items}


def test_every_quick_v1_prompt_has_the_llamacpp_ids_and_transformers_reads_them_alike() -> None:
    llamacpp = build_plan(load_config(QUICK_V1), create_backend(load_config(QUICK_V1)))
    hf_config = load_config(QUICK_V1, {"model": "hf/bundled"})
    hf_backend = create_backend(hf_config)
    hf = build_plan(hf_config, hf_backend)
    assert isinstance(hf_backend, HfBackend) and len(hf.items) == len(llamacpp.items) == 72
    assert _by_cell(hf.items) == _by_cell(llamacpp.items)

    path = bundled_model_path()
    converted = transformers.AutoTokenizer.from_pretrained(
        str(path.parent), gguf_file=path.name, local_files_only=True
    )
    differing = [
        item.item_id
        for item in hf.items
        if converted(item.prompt.text, add_special_tokens=False)["input_ids"] != list(item.prompt.token_ids)
    ]
    assert differing == []


def _ask(backend: HfBackend, prompts: list[list[int]], cold: bool) -> list[tuple[str, int]]:
    answers = []
    for ids in prompts:
        if cold:
            backend.clear_cache()
        completion = asyncio.run(
            backend.generate(GenerateRequest((), tuple(ids), GenerationParams(max_tokens=12)))
        )
        assert completion.error is None
        answers.append((completion.text, completion.cached_tokens))
    return answers


def test_prefix_reuse_gives_the_answers_of_a_cold_cache() -> None:
    backend = HfBackend(bundled_model_path(), HfOptions(device="cpu", n_threads=2))
    tokenizer = backend.tokenizer()
    ledger = "Ledger of the Tessaly depot, shelf by shelf: the blue ledger is on shelf 7. " * 4
    chat = [
        tokenizer.encode(
            tokenizer.render_chat([{"role": "user", "content": f"{ledger}\n{question}"}]), special=True
        )
        for question in ("Which shelf holds the blue ledger?", "Who keeps the depot keys?", "Name the depot.")
    ]
    shared = min(common_prefix(chat[0], ids) for ids in chat[1:])
    try:
        warm = _ask(backend, chat, cold=False)
        cold = _ask(backend, chat, cold=True)
    finally:
        backend.close()
    assert [cached for _, cached in cold] == [0, 0, 0]
    assert warm[0][1] == 0 and all(cached >= shared - 1 for _, cached in warm[1:]) and shared > 60
    assert [text for text, _ in warm] == [text for text, _ in cold]
    assert "7" in warm[0][0]  # the model read the ledger
