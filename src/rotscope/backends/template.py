"""A chat template of the experiment's own (``chat_template: FILE``, or a subject's) instead of the
model's: the backend is wrapped so that its tokenizer renders chats with that template, and its
description carries the template's digest, so the run's identity, manifest and release record
name the template the prompts were rendered with.

Only an engine that takes the verified token ids can be given one: a remote API is sent messages
and applies its server's template, whatever rotscope renders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.tokenizers import render_template
from rotscope.types import Backend, BackendDescription, Completion, GenerateRequest, Tokenizer


def read_template(path: str) -> str:
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"chat_template: cannot read {file} ({error})") from None
    if not text.strip():
        raise BadInput(f"chat_template: {file} is empty")
    return text


def template_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class TemplatedTokenizer:
    """``inner`` with chats rendered by ``template``; its digest covers the template."""

    def __init__(self, inner: Tokenizer, template: str) -> None:
        self.inner = inner
        self.template = template
        self.name = f"{inner.name}+template:{template_digest(template)}"

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return self.inner.encode(text, special=special)

    def decode(self, ids: Sequence[int]) -> str:
        return self.inner.decode(ids)

    def piece(self, token_id: int) -> bytes:
        return self.inner.piece(token_id)

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        special = {
            "bos_token": str(getattr(self.inner, "_bos_text", "")),
            "eos_token": str(getattr(self.inner, "_eos_text", "")),
        }
        try:
            return render_template(self.template, messages, **special)
        except Exception as error:  # a user's template: any Jinja fault is bad input
            raise BadInput(f"chat_template: the template does not render ({error})") from None

    def digest(self) -> str:
        return f"{self.inner.digest()}+{template_digest(self.template)}"


class TemplatedBackend:
    """``inner`` whose prompts are rendered with ``template``; every other attribute is its own
    (cache clearing, engine modes, batching), so checks by protocol see the engine itself."""

    def __init__(self, inner: Backend, template: str, path: str) -> None:
        if not inner.capabilities.exact_ids:
            raise BadInput(
                f"chat_template: {inner.model_id} is sent messages and its server applies its own "
                "template; a chat template is for engines that take token ids (llamacpp, hf, vllm)"
            )
        self._inner = inner
        self._template = template
        self._path = path
        self._tokenizer: TemplatedTokenizer | None = None
        self.model_id = inner.model_id
        self.context_window = inner.context_window
        self.capabilities = inner.capabilities

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")  # absent while unpickling: no recursion
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tokenizer": None}  # rebuilt where it is used

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = TemplatedTokenizer(self._inner.tokenizer(), self._template)
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        self._inner.reserve(max_prompt_tokens, max_new_tokens)

    async def generate(self, request: GenerateRequest) -> Completion:
        return await self._inner.generate(request)

    def describe(self) -> BackendDescription:
        return {
            **self._inner.describe(),
            "template_digest": template_digest(self._template),
            "chat_template": self._path,
        }

    def close(self) -> None:
        self._inner.close()


def with_template(backend: Backend, path: str | None) -> Backend:
    """``backend`` as is, or wrapped to render with the template file at ``path``."""
    if path is None:
        return backend
    return TemplatedBackend(backend, read_template(path), path)
