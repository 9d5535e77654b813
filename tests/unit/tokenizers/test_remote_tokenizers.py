"""Local tokenizers for remote models: exact pieces for a tokenizer.json (byte-level BPE trained
here), a tiktoken encoding, and the approximate estimate; tiktoken never downloads; prompts built
on each verify; retry timing reads Retry-After."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from rotscope.backends.retry import retry_after_seconds
from rotscope.errors import BadInput
from rotscope.prompt.builder import PromptBuilder
from rotscope.tokenizers.remote import (
    ApproximateTokenizer,
    HFTokenizer,
    TiktokenTokenizer,
    load_tokenizer,
    render_plain,
)
from rotscope.types import Case, Evidence, Layout, Oracle, Tokenizer

TEXTS = ["plain words here.", "café 漢字 データ 🙂 end", "def f(x):\n\treturn x  \n\n"]
SMALL_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def hf_tokenizer_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE tokenizer.json trained on a few lines, with a chat template beside it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|user|>", "<|assistant|>", "<|end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    lines = [*TEXTS, "the river stone paper quiet window table garden lantern"] * 20
    model.train_from_iterator(lines, trainer)
    folder = tmp_path_factory.mktemp("hf")
    model.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": SMALL_TEMPLATE}))
    return folder / "tokenizer.json"


def byte_encoding() -> tiktoken.Encoding:
    """A tiktoken encoding built here (bytes plus a few merges), so no vocabulary file is needed."""
    ranks = {bytes([byte]): byte for byte in range(256)}
    for merge in (b"th", b"the", b"he", b"in", b" t", b" the"):
        ranks[merge] = len(ranks)
    return tiktoken.Encoding(
        name="test-bytes",
        pat_str=r"""'s|'t| ?\w+| ?[^\s\w]+|\s+(?!\S)|\s+""",
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": len(ranks)},
    )


@pytest.fixture(params=["approximate", "hf", "tiktoken"])
def remote_tokenizer(request: pytest.FixtureRequest, hf_tokenizer_path: Path) -> Tokenizer:
    if request.param == "approximate":
        return ApproximateTokenizer()
    if request.param == "hf":
        return HFTokenizer(hf_tokenizer_path)
    return TiktokenTokenizer(byte_encoding())


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_concatenate_to_the_text(remote_tokenizer: Tokenizer, text: str) -> None:
    ids = remote_tokenizer.encode(text)
    assert b"".join(remote_tokenizer.piece(i) for i in ids) == text.encode("utf-8")
    assert remote_tokenizer.decode(ids) == text
    assert remote_tokenizer.encode(remote_tokenizer.decode(ids)) == ids


def test_prompts_built_on_each_tokenizer_verify(
    remote_tokenizer: Tokenizer, prose: Callable[..., str], corpus_from_text: Callable[..., Any]
) -> None:
    case = Case(
        case_id="c1",
        task="niah",
        evidence=(Evidence("e1", "The magic number of Harbor is 4817."),),
        question="What is the magic number of Harbor?",
        oracle=Oracle("4817"),
    )
    builder = PromptBuilder(remote_tokenizer, corpus_from_text(prose(300), remote_tokenizer))
    length = builder.fixed_tokens(case) + 400  # the trained vocabularies are small: many tokens a line
    prompt = builder.render(case, Layout(length, 0.5))
    assert abs(prompt.prompt_tokens - length) <= 0.05 * length
    span = prompt.spans[0]
    assert "4817" in remote_tokenizer.decode(prompt.token_ids[span.token_start : span.token_end])


def test_hf_template_comes_from_tokenizer_config(hf_tokenizer_path: Path) -> None:
    tokenizer = HFTokenizer(hf_tokenizer_path)
    assert tokenizer.render_chat([{"role": "user", "content": "hi"}]) == "<|user|>hi<|end|><|assistant|>"
    alone = hf_tokenizer_path.parent / "alone"
    alone.mkdir()
    (alone / "tokenizer.json").write_bytes(hf_tokenizer_path.read_bytes())
    plain = load_tokenizer(str(alone))
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert plain.render_chat(messages) == render_plain(messages) == "s\n\nu"


def test_approximate_estimate_is_near_a_bpe_count() -> None:
    english = "The quick brown fox jumps over the lazy dog near the quiet river bank. " * 20
    assert 0.8 <= ApproximateTokenizer().count(english) / (16 * 20) <= 1.3
    assert ApproximateTokenizer().approximate and not TiktokenTokenizer(byte_encoding()).approximate


def test_tiktoken_never_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tiktoken.registry.ENCODINGS.pop("cl100k_base", None)
    with pytest.raises(BadInput, match="not in the local cache"):
        load_tokenizer("tiktoken:cl100k_base")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BadInput, match="Unknown encoding"):
        load_tokenizer("tiktoken:no-such-encoding")


def test_unknown_tokenizer_spec_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="neither tiktoken:NAME nor an existing file"):
        load_tokenizer(str(tmp_path / "missing.json"))
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{}")
    with pytest.raises(BadInput, match=r"is not a tokenizer\.json"):
        load_tokenizer(str(broken))


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "3"}, now) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}, now) == 0.25
    assert retry_after_seconds({"retry-after": "Thu, 01 Jan 2026 12:00:05 GMT"}, now) == 5.0
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None
