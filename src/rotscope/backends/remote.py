"""What every remote backend shares: the API key read from the environment at call time (and kept
out of every reply and message that leaves the backend), retries, failure classification and the
local tokenizer.

A subclass implements ``_send`` for one request: it returns a ``Completion`` or raises
``Transient`` (retried), ``Permanent`` (an error row at once) or ``BackendRefused`` (stop the run)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import (
    Permanent,
    RetryPolicy,
    Transient,
    Unreachable,
    call_with_retries,
    is_retry_status,
    retry_after_seconds,
)
from rotscope.errors import BackendRefused
from rotscope.tokenizers.remote import is_approximate, load_tokenizer
from rotscope.types import BackendDescription, Capabilities, Completion, GenerateRequest, Tokenizer

UNKNOWN_CONTEXT_WINDOW = 10_000_000
"""Remote APIs do not report their window; an over-long prompt comes back as an error row."""
_DETAIL_CHARS = 300
REDACTED = "[redacted]"


def missing_extra(package: str, extra: str) -> BackendRefused:
    return BackendRefused(
        f"model: the {extra} backend needs the {package} package: pip install rotscope[{extra}]"
    )


def require_reply(text: str, stop_reason: str | None) -> str:
    """``text``, or ``Permanent`` when it is empty because the provider stopped it (a content
    filter, a safety block, a refusal, or a token limit spent before any visible text, as a
    reasoning model can): that reply says nothing of the model's use of its context, so it is an
    error row rather than an abstention."""
    if text.strip() or stop_reason is None:
        return text
    raise Permanent(f"empty reply, stopped by the provider ({stop_reason})")


class RemoteBackend:
    """Base of the ``openai``, ``anthropic`` and ``gemini`` backends."""

    provider: ClassVar[str]
    capabilities = Capabilities()
    """Remote: re-tokenizes text, runs as many calls at once as the provider's limits allow."""
    default_key_env: ClassVar[str]
    key_required: ClassVar[bool] = True
    default_base_url: ClassVar[str]

    def __init__(self, name: str, options: RemoteOptions) -> None:
        if not name:
            raise BackendRefused(f"model: {self.provider}/ needs a model name, e.g. {self.provider}/NAME")
        self.name = name
        self.options = options
        self.model_id = f"{self.provider}/{name}"
        self.base_url = (options.base_url or self.default_base_url).rstrip("/")
        if "," in self.base_url:
            raise BackendRefused(
                f"remote.base_url: {self.provider}/ takes one server, not {self.base_url!r} "
                "(several replicas are for serve/NAME)"
            )
        self._tokenizer: Tokenizer = load_tokenizer(options.tokenizer)
        self.context_window = int(getattr(self._tokenizer, "context_window", 0) or UNKNOWN_CONTEXT_WINDOW)
        self._policy = RetryPolicy(options.max_attempts, options.backoff_initial_s, options.backoff_max_s)
        self._reached = False

    @property
    def key_env(self) -> str:
        return self.options.api_key_env or self.default_key_env

    def api_key(self) -> str | None:
        """The key, read now from the environment; ``BackendRefused`` when one is needed and unset."""
        key = os.environ.get(self.key_env) or None
        if key is None and (self.key_required or self.options.api_key_env):
            raise BackendRefused(
                f"remote.api_key_env: environment variable {self.key_env} is not set "
                f"(it must hold the API key for {self.model_id})"
            )
        return key

    def redact(self, text: str) -> str:
        """``text`` with the API key (if any) replaced, for every reply and message that leaves the
        backend: what a subject or a judge answers, and every error."""
        key = os.environ.get(self.key_env)
        return text.replace(key, REDACTED) if key else text

    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    async def _send(self, request: GenerateRequest, key: str | None) -> Completion:
        raise NotImplementedError

    async def generate(self, request: GenerateRequest) -> Completion:
        started = time.perf_counter()
        key = self.api_key()
        attempts = 0

        async def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            return await self._send(request, key)

        try:
            completion = await call_with_retries(attempt, self._policy)
        except BackendRefused as refused:
            raise BackendRefused(self.redact(str(refused))) from None
        except Unreachable as failure:
            if not self._reached:  # a wrong base_url or a server not started: every call would fail
                raise BackendRefused(
                    f"remote.base_url: cannot reach {self.base_url} ({failure}, {attempts} attempts); "
                    "is the server running?"
                ) from None
            return self._failed(f"{failure} (after {attempts} attempts)", started, attempts)
        except (Transient, Permanent) as failure:
            suffix = f" (after {attempts} attempts)" if isinstance(failure, Transient) else ""
            return self._failed(f"{failure}{suffix}", started, attempts)
        except Exception as error:  # a bug in parsing must not stop the run: an error row, retried on resume
            return self._failed(f"{type(error).__name__}: {error}", started, attempts)
        self._reached = True
        # A gateway that echoes request headers puts the key in a successful reply too.
        return replace(
            completion,
            text=self.redact(completion.text),
            latency_s=time.perf_counter() - started,
            attempts=attempts,
        )

    def _failed(self, message: str, started: float, attempts: int) -> Completion:
        return Completion(
            text="", latency_s=time.perf_counter() - started, error=self.redact(message), attempts=attempts
        )

    def check_status(self, status: int, headers: Mapping[str, str], detail: str) -> None:
        """Raise the failure an HTTP status means; return for success."""
        if status < 400:
            return
        detail = " ".join(self.redact(detail).split())[:_DETAIL_CHARS]
        if status in (401, 403):
            raise BackendRefused(
                f"{self.model_id}: the provider refused the API key from ${self.key_env} "
                f"(HTTP {status}): {detail}"
            )
        if status == 404:
            raise BackendRefused(f"model: {self.model_id} not found at {self.base_url} (HTTP 404): {detail}")
        if is_retry_status(status):
            raise Transient(f"HTTP {status}: {detail}", retry_after_seconds(headers))
        raise Permanent(f"HTTP {status}: {detail}")

    def describe(self) -> BackendDescription:
        approximate = is_approximate(self._tokenizer)
        return {
            "backend": self.provider,
            "model": self.model_id,
            "base_url": self.base_url,
            "tokenizer": self._tokenizer.name,
            "tokenizer_digest": self._tokenizer.digest(),
            "token_count": "approximate" if approximate else "exact",
            "api_key_env": self.key_env,
            "options": self.options.model_dump(mode="json", exclude={"base_url", "api_key_env"}),
        }

    def close(self) -> None:
        return None
