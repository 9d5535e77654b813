"""The protocols a component implements: a model's ``Tokenizer``, a ``Backend`` (with its
``Capabilities``; a ``BatchingBackend`` takes many requests at once), a ``TaskFamily`` and a family
that ``PlansOwnPrompts``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from rotscope.types.call import Completion, GenerateRequest, Likelihood, LikelihoodRequest
from rotscope.types.case import Case
from rotscope.types.rendering import FamilyPrompts


@runtime_checkable
class Tokenizer(Protocol):
    """A model's own tokenizer. Ids round-trip through ``piece`` as raw bytes."""

    name: str

    def encode(self, text: str, *, special: bool = False) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def piece(self, token_id: int) -> bytes:
        """The exact bytes one token contributes to the decoded text."""
        ...

    def count(self, text: str) -> int: ...

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """The model's chat template applied to ``messages``, generation prompt included."""
        ...

    def digest(self) -> str:
        """Identifies vocabulary and chat template, so results on another tokenizer never mix."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What a backend is, so the executor and checks ask it rather than a list of names."""

    local: bool = False
    """Runs on this machine: calls go one at a time in prefix order, never through the response
    cache, at no cost; cache controls may compare warm and cold answers."""
    exact_ids: bool = False
    """The model receives the verified token ids themselves, so the prompt-token count it reports
    must equal them exactly (else the delivery check allows the slack of a re-tokenizing API)."""
    max_concurrency: int | None = None
    """Calls at once; ``None``: the provider's configured limits decide."""
    batching: bool = False
    """Takes many requests at once and schedules them itself (an engine like vLLM)."""
    clearable_cache: bool = False
    """Its KV cache can be cleared between calls (cache controls need it)."""
    worker_process: bool = False
    """Can be sent to an engine worker process (pickled without its loaded engine)."""
    likelihood: bool = False
    """Reads the log-probability of given answer tokens after the prompt (``ReadsLikelihood``):
    ``run --score likelihood|both`` need it (docs/statistics.md, "Scores")."""
    harness_prompt: bool = False
    """A harness between rotscope and the model adds a prompt of its own (an agent CLI's system
    prompt and tool definitions): a reported prompt count above the ids sent is that harness
    overhead, measured and shown, not a prompt extended on its way; a count below is still a cut."""


class BackendDescription(TypedDict, total=False):
    """What ``Backend.describe()`` returns: the name, arguments and digests that identify a model,
    stored with every run (``RunMeta.backend``, ``Plan.backend``) and hashed into its items' ids and
    the response cache's keys. Every backend sets ``backend`` and ``tokenizer``; the rest depend on
    its kind (a local file, a folder, a server, an executable)."""

    backend: str
    """The provider (``hf``, ``llamacpp``, ``vllm``, ``serve``, ``fake``, a remote API's name)."""
    provider: str
    """An imported run's (``rotscope import``) in place of ``backend``."""
    model: str
    """The model id a server, an API, an executable or a fake backend answers as."""
    model_file: str
    model_folder: str
    model_digest: str
    executable: str
    kind: str | None
    """The server kind (``serve/``): the configured one, ``None`` to detect it."""
    base_url: str
    api_key_env: str
    device: str
    engine_version: str
    versions: dict[str, str | None]
    tokenizer: str
    tokenizer_digest: str
    template_digest: str
    chat_template: str
    """The template file a ``--chat-template`` wrapper renders with."""
    token_count: Literal["exact", "approximate"]
    context_window: int | None
    """What compare shows lengths against; ``None`` for an executable whose window is unknown."""
    options: dict[str, Any]
    """The backend's options as it dumps them (their keys are each backend's own)."""


class Backend(Protocol):
    """A model endpoint. ``generate`` never raises for model or network faults: it returns
    a ``Completion`` whose ``error`` is set, so the failure is recorded, never scored."""

    model_id: str
    context_window: int
    capabilities: Capabilities

    def tokenizer(self) -> Tokenizer: ...

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        """Prepare for prompts up to this size before the first call (a local engine's context)."""
        ...

    async def generate(self, request: GenerateRequest) -> Completion: ...

    def describe(self) -> BackendDescription:
        """Name, arguments and digests that identify this model, stored with every run."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class BatchingBackend(Backend, Protocol):
    """A backend that takes many requests at once and schedules them itself (``Capabilities.batching``:
    vLLM). The executor hands it up to ``batch_size`` consecutive items of the run's order."""

    batch_size: int

    async def generate_batch(self, requests: Sequence[GenerateRequest]) -> Sequence[Completion]:
        """One completion per request, in the order given. A fault of one request is its own error
        completion; an exception fails the whole batch (each request becomes an error row)."""
        ...


@runtime_checkable
class ReadsLikelihood(Backend, Protocol):
    """A backend that gives the gold answer's likelihood (``Capabilities.likelihood``): one prefill
    of the prompt with each answer form teacher-forced after it, no generation."""

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """Never raises for model or network faults: the ``Likelihood``'s ``error`` says it."""
        ...


@runtime_checkable
class ReadsLikelihoodBatch(ReadsLikelihood, Protocol):
    """A batching engine that reads many requests' likelihoods at once (vLLM): the executor hands
    it a chunk's readings together, as it hands ``BatchingBackend.generate_batch`` their replies."""

    async def likelihood_batch(self, requests: Sequence[LikelihoodRequest]) -> Sequence[Likelihood]:
        """One reading per request, in the order given; a fault of one is its own error reading,
        an exception fails the chunk (each request an error row)."""
        ...


class TaskFamily(Protocol):
    @property
    def name(self) -> str: ...

    def cases(self) -> Iterable[Case]: ...


@runtime_checkable
class PlansOwnPrompts(Protocol):
    """A family that plans its own prompts (the reasoning family: items inside other items) instead
    of handing cases to the planner's layouts."""

    def plan_prompts(self, tokenizer: Tokenizer, neutral_corpus: Callable[[], Any]) -> FamilyPrompts:
        """Every prompt of the family; ``neutral_corpus`` gives the experiment's own filler."""
        ...
