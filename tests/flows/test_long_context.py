"""Past the bundled model's 8K window: a 32K-token grid planned, verified and run end to end through
``openai/NAME --base-url`` against the stub server (``tests/support/chat_server.py``), which answers as
``fake/lexical``, counts with the same ``tokenizer.json`` and reports the prefix it kept cached.
``benchmarks/long_context.py`` runs the same path at 128K and 1M tokens."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rotscope.config.experiment import build_config
from rotscope.execution.calls.order import _common_text
from rotscope.execution.workflows.runner import run_experiment
from rotscope.store import RunStore
from rotscope.tokenizers.remote import HFTokenizer
from tests.support.chat_server import ChatServer
from tests.support.cli_helpers import bpe_tokenizer_folder, nonsense_corpus

LENGTH = 32_768


@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long")
    return bpe_tokenizer_folder(root / "tokenizer", nonsense_corpus(root / "corpus", files=6, lines=200))


@pytest.fixture
def server(tokenizer_folder: Path) -> Iterator[ChatServer]:
    counter = HFTokenizer(tokenizer_folder / "tokenizer.json")
    started = ChatServer(tokenize=lambda messages: counter.encode(counter.render_chat(messages))).start()
    yield started
    started.stop()


def test_a_32k_grid_runs_end_to_end_at_the_trie_bound(
    tokenizer_folder: Path, server: ChatServer, tmp_path: Path
) -> None:
    corpus = tokenizer_folder.parent / "corpus"
    config = build_config(
        {
            "name": "long",
            "model": "openai/stub",
            "remote": {"base_url": server.base_url, "tokenizer": str(tokenizer_folder / "tokenizer.json")},
            "filler": {"kind": "text", "glob": str(corpus / "*.txt"), "allow_repeat": True},
            "tasks": ["niah"],
            "lengths": [LENGTH],
            "depths": [0.5],
            "limit": 1,
            "order": "prefix",
            "cache": {"enabled": False},
        }
    )
    started = time.perf_counter()
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    seconds = time.perf_counter() - started
    with RunStore.read(run_dir) as store:
        rows = store.rows()
        bound = store.meta()["tokens"]["lower_bound"]

    assert len(rows) == 2 and {row["status"] for row in rows} == {"ok"}
    assert {row["outcome"] for row in rows} == {"correct"}  # the needle found, the control abstains
    assert all(abs(row["prompt_tokens"] - LENGTH) <= config.length_tolerance * LENGTH for row in rows)
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in rows)  # the same tokenizer
    evaluated = sum(row["usage_prompt_tokens"] - row["cached_tokens"] for row in rows)
    assert bound < 0.8 * sum(row["prompt_tokens"] for row in rows)  # half of each prompt is shared
    assert bound <= evaluated <= 1.01 * bound
    assert seconds < 60  # about 5 s on an idle core


def test_common_text_is_the_common_prefix_and_fast_at_a_million_tokens() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        stem = "".join(rng.choice("ab") for _ in range(rng.randint(0, 10)))
        texts = [stem + "".join(rng.choice("ab") for _ in range(rng.randint(0, 4))) for _ in range(3)]
        assert _common_text(texts) == os.path.commonprefix(texts)  # noqa: RUF071 (the reference)
    shared = "line of filler\n" * 300_000  # about the characters of a 1M-token prompt
    started = time.perf_counter()
    assert _common_text([shared + "tail one", shared + "tail two", shared]) == shared
    assert time.perf_counter() - started < 0.5  # a loop per character took seconds
