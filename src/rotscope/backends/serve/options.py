"""The ``serve/NAME`` backend's own section of the experiment file (``serve:``), apart from the
backend so that reading a config never imports httpx."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rotscope.config.options import PathOption, RuntimeOption
from rotscope.config.sections import Float, Int, OptionalInt, SectionSpec, StrictOptions

ServerKind = Literal["vllm", "sglang", "llamacpp"]


class ServeOptions(StrictOptions):
    """How rotscope sends exact token ids to servers the user already runs (``serve/NAME``: vLLM's
    or SGLang's ``/v1/completions``, llama.cpp's ``llama-server`` ``/completion``).

    The servers are ``--base-url URL[,URL...]`` (``remote.base_url``), or ``base_url`` here: several
    are a pool of replicas of one model, each prefix group of the run sent to one of them. rotscope
    renders every prompt with ``tokenizer`` (and its chat template, or ``template``) and verifies
    it; the server's reported prompt-token count must equal the ids sent."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(subject_overrides=True)
    """A subject (``subjects:``) may set its keys one by one. Added after identities and plans were
    first frozen: left out of them while at its defaults (``identity_when_set``, the default), so a
    config without ``serve:`` keeps its digest and plan."""

    kind: ServerKind | None = None
    """The server's software: ``vllm``, ``sglang`` or ``llamacpp``; unset: detected from its
    ``GET /v1/models`` (the models' ``owned_by``)."""
    tokenizer: Annotated[str | None, PathOption(by_content="subject.tokenizer_digest")] = None
    """The model's own tokenizer, required: a GGUF file or a Hugging Face ``tokenizer.json`` (the
    chat template read from it or from the ``tokenizer_config.json`` beside it); never downloaded.
    Relative to the experiment file."""
    template: Annotated[str | None, PathOption(by_content="subject.template_digest")] = None
    """A Jinja chat template file to render with instead of the tokenizer's own."""
    base_url: Annotated[str | None, RuntimeOption()] = None
    """The servers, comma separated (``http://HOST:PORT``, with or without ``/v1``); unset:
    ``remote.base_url`` (``--base-url``). Where the replicas are never changes an answer."""
    concurrency: Annotated[Int, RuntimeOption()] = Field(default=1, gt=0)
    """Calls in flight at once on each replica."""
    context_window: OptionalInt = Field(default=None, gt=0)
    """The served model's window in tokens; unset: the GGUF tokenizer's, else unchecked (an
    over-long prompt comes back as an error row)."""
    timeout_s: Annotated[Float, RuntimeOption()] = Field(default=600.0, gt=0.0)
    """Seconds one request may take; past it the replica is asked whether it is still up."""
    max_attempts: Annotated[Int, RuntimeOption()] = Field(default=3, ge=1)
    """Attempts per call on one replica for a reply another attempt may cure (HTTP 429, 5xx, a body
    that is not a reply); a replica that stops answering is marked down at once."""
    unhealthy_after: Annotated[Int, RuntimeOption()] = Field(default=3, ge=1)
    """Consecutive failed calls (no answer, a timeout, HTTP 5xx or 429, a body that is not a reply,
    a prompt-token count other than the ids sent) after which a replica is taken out of the pool
    while another replica is in it; each failed call is sent again to a replica in the pool in the
    same pass, and the calls the replica had left go to the others. The last replica in the pool is
    never taken out for failing: its failed calls are error rows, retried by ``--resume``."""
    probe_after_s: Annotated[Float, RuntimeOption()] = Field(default=30.0, gt=0.0)
    """Seconds before a replica taken out of the pool is probed again (``GET /v1/models``) at the
    start of the run's next pass, doubled each time it is taken out again; a probe it answers puts it
    back. A pool with no replica left probes every one at once."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra request fields passed through unchanged (e.g. ``repeat_penalty``, ``top_k``)."""
