"""Tokenizers: the target model's own vocabulary (GGUF), remote models' tokenizers, GGUF checks."""

from rotscope.tokenizers.gguf import check_gguf, file_digest
from rotscope.tokenizers.local import FakeTokenizer, LlamaCppTokenizer, render_template
from rotscope.tokenizers.remote import is_approximate, load_tokenizer

__all__ = [
    "FakeTokenizer",
    "LlamaCppTokenizer",
    "check_gguf",
    "file_digest",
    "is_approximate",
    "load_tokenizer",
    "render_template",
]
