"""The tokenizer contract: exact pieces, special tokens, chat template, char <-> token mapping."""

from __future__ import annotations

import pytest

from rotscope.tokenizers.local import FakeTokenizer, LlamaCppTokenizer, char_offsets, token_at_char
from rotscope.types import Tokenizer

TEXTS = ["plain words here.", "café 漢字 データ 🙂 end", "def f(x):\n\treturn x  \n\n"]


@pytest.fixture(params=["fake", "real"])
def any_tokenizer(request: pytest.FixtureRequest, real_tokenizer: LlamaCppTokenizer) -> Tokenizer:
    return FakeTokenizer() if request.param == "fake" else real_tokenizer


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_concatenate_to_the_text(any_tokenizer: Tokenizer, text: str) -> None:
    ids = any_tokenizer.encode(text)
    assert b"".join(any_tokenizer.piece(i) for i in ids) == text.encode("utf-8")
    assert any_tokenizer.decode(ids) == text
    assert any_tokenizer.count(text) == len(ids)


@pytest.mark.parametrize("text", TEXTS)
def test_char_offsets_locate_every_character(any_tokenizer: Tokenizer, text: str) -> None:
    ids = any_tokenizer.encode(text)
    offsets = char_offsets(any_tokenizer, ids)
    assert offsets[0] == 0 and offsets[-1] == len(text)
    assert offsets == sorted(offsets)
    for char_index, character in enumerate(text):
        token = token_at_char(any_tokenizer, ids, char_index)
        # The character's bytes overlap the bytes of the token that holds it.
        start = len(text[:char_index].encode("utf-8"))
        token_start = sum(len(any_tokenizer.piece(i)) for i in ids[:token])
        token_end = token_start + len(any_tokenizer.piece(ids[token]))
        assert token_start <= start < token_end, (character, token)
    with pytest.raises(IndexError):
        token_at_char(any_tokenizer, ids, len(text))


def test_special_tokens_only_when_asked(real_tokenizer: LlamaCppTokenizer) -> None:
    marker = "<|im_start|>"
    assert len(real_tokenizer.encode(marker, special=True)) == 1
    assert len(real_tokenizer.encode(marker, special=False)) > 1


def test_chat_template_from_the_gguf(real_tokenizer: LlamaCppTokenizer) -> None:
    rendered = real_tokenizer.render_chat([{"role": "user", "content": "hello"}])
    assert "<|im_start|>user\nhello<|im_end|>" in rendered
    assert rendered.endswith("<|im_start|>assistant\n")
    assert real_tokenizer.context_window == 8192


def test_digest_separates_tokenizers(real_tokenizer: LlamaCppTokenizer) -> None:
    assert real_tokenizer.digest() == real_tokenizer.digest()
    assert real_tokenizer.digest() != FakeTokenizer().digest()
