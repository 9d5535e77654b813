"""The section of the experiment file (``remote:``) the remote providers share (``openai/``,
``anthropic/``, ``gemini/``; the judge's ``judge.remote`` too), apart from their modules so that
reading a config never imports a provider SDK."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from rotscope._util.urls import urls_problem
from rotscope.config.options import PathOption, RuntimeOption
from rotscope.config.sections import Float, Int, SectionSpec, StrictOptions


class RemoteOptions(StrictOptions):
    """How to reach a model served elsewhere (``openai/…``, ``anthropic/…``, ``gemini/…``).

    The API key is read at call time from the environment variable ``api_key_env`` names (the
    provider's usual variable when unset); the key itself is never part of the config.
    ``tokenizer`` counts lengths locally: a GGUF file (its vocabulary and chat template), a Hugging
    Face ``tokenizer.json``, or ``tiktoken:NAME`` (only when the encoding is cached locally); with
    none, lengths are an estimate and the run is marked approximate.
    """

    SECTION: ClassVar[SectionSpec] = SectionSpec(subject_overrides=True, identity_when_set=False)
    """A subject (``subjects:``) may set its keys one by one. Part of every run identity since
    before sections were registered, so at its defaults too (``identity_when_set=False``: configs
    keep their digests)."""

    base_url: str | None = None
    """The server's address (``http(s)://HOST[:PORT][/PATH]``); unset: the provider's own. Only
    ``serve/NAME`` takes several, comma separated (its replicas)."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable holding the API key; unset: the provider's usual one."""
    timeout_s: Float = Field(default=120.0, gt=0.0)
    """Seconds one request may take before it is retried."""
    max_attempts: Int = Field(default=6, ge=1)
    """Attempts per call for a fault another attempt may cure (a timeout, a rate limit, a server
    error); a refused request is not retried."""
    backoff_initial_s: Float = Field(default=1.0, ge=0.0)
    """Seconds before the first retry; each further wait doubles, up to ``backoff_max_s``."""
    backoff_max_s: Float = Field(default=60.0, ge=0.0)
    """The longest wait between two attempts."""
    tokenizer: Annotated[
        str | None, PathOption(keep_prefix="tiktoken:", by_content="subject.tokenizer_digest")
    ] = None
    """What counts lengths locally: a GGUF file, a ``tokenizer.json`` or ``tiktoken:NAME``;
    relative to the experiment file."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """OpenAI reasoning models take ``max_completion_tokens``; most compatible servers ``max_tokens``."""
    reasoning_effort: str | None = None
    """Sent as the request's ``reasoning_effort`` (OpenAI reasoning models); unset: not sent."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra request fields passed through unchanged (e.g. ``top_p``, provider-specific options)."""
    server_log: Annotated[str | None, PathOption(), RuntimeOption()] = None
    """``openai/`` only: the log file of a llama-cpp-python server run verbose (its default), from
    which each row's cached tokens are counted where the server's usage reports none (its
    ``prefix-match hit`` lines, matched to requests in order, so it needs
    ``limits.openai.concurrency: 1``). Unset, such a server's rows have unknown cached tokens."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        """A server address is ``http(s)://HOST[:PORT][/PATH]``: anything else could only be
        retried until every row is an error."""
        if url is None:
            return None
        problem = urls_problem(url)  # several: the replicas of a serve/NAME model
        if problem is not None:
            raise ValueError(problem)
        return url
