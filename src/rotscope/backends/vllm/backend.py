"""vLLM in this process on a local model folder (``vllm/PATH``, extra ``rotscope[vllm]``).

Prompts go to the engine as token ids (``TokensPrompt``), so the model sees exactly the verified
prompt; the engine echoes the ids it ran, and any difference is an error row naming the first
position where they part. Prefix caching is on and the executor hands the engine chunks of
consecutive items in prefix order (``BatchingBackend``), so one chunk's shared prefixes are
evaluated once; ``RequestOutput.num_cached_tokens`` is recorded as each row's cached tokens.

It reads the gold answer's likelihood (``ReadsLikelihood``) as vLLM's ``prompt_logprobs``: each
answer form is its own prompt, the verified prompt with the form's ids after it, run for one
generated token with ``SamplingParams(prompt_logprobs=0)`` (each prompt token's own
log-probability); the form's positions are read from the end. A chunk's readings go to the engine
together (``likelihood_batch``). vLLM computes prompt log-probabilities only for tokens it
evaluates, so these prompts do not read its prefix cache: each reading prefills its whole prompt.

Lengths and spans are counted with the folder's own ``tokenizer.json`` and chat template, the same
files vLLM loads. Nothing is downloaded: the model must be a local folder, and the Hugging Face hub
is switched offline before vLLM is imported.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from rotscope.backends import register_backend
from rotscope.backends.remote import missing_extra
from rotscope.backends.vllm.options import VllmOptions
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.tokenizers.gguf import file_digest
from rotscope.tokenizers.remote import HFTokenizer
from rotscope.types import (
    BackendDescription,
    Capabilities,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
)

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def model_folder_window(folder: Path) -> int:
    """The context window a model folder's ``config.json`` declares (``max_position_embeddings``)."""
    config_path = folder / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadInput(f"model: {config_path} is not a readable model config ({error})") from None
    window = config.get("max_position_embeddings") if isinstance(config, dict) else None
    if not isinstance(window, int) or window <= 0:
        raise BadInput(f"model: {config_path} has no positive max_position_embeddings")
    return window


def folder_digest(folder: Path) -> str:
    """Identifies a model folder: each file's name and fast digest (``file_digest``), in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder)}:{file_digest(path)}\n".encode())
    return digest.hexdigest()[:16]


def first_difference(sent: Sequence[int], echoed: Sequence[int]) -> int | None:
    """The first position where two id sequences differ (a length difference counts); ``None``
    when they are equal."""
    for position, (ours, theirs) in enumerate(zip(sent, echoed, strict=False)):
        if ours != theirs:
            return position
    return None if len(sent) == len(echoed) else min(len(sent), len(echoed))


def import_vllm() -> ModuleType:
    """The ``vllm`` package, imported offline; a one-line ``pip install`` error when it is missing."""
    for name, value in OFFLINE.items():
        os.environ[name] = value
    try:
        return importlib.import_module("vllm")
    except ImportError:
        raise missing_extra("vllm", "vllm") from None


class VllmBackend:
    """A ``vllm.LLM`` made lazily on the first batch, sized by ``reserve`` to the run's longest prompt."""

    capabilities = Capabilities(
        local=True,
        exact_ids=True,
        max_concurrency=1,
        batching=True,
        clearable_cache=True,
        likelihood=True,
    )

    def __init__(self, folder: Path, options: VllmOptions, seed: int, module: ModuleType) -> None:
        self.folder = folder
        self.options = options
        self.seed = seed
        self.batch_size = options.batch_size
        self.model_id = f"vllm/{folder}"
        self.context_window = model_folder_window(folder)
        if not (folder / "tokenizer.json").is_file():
            raise BadInput(f"model: {folder} has no tokenizer.json (rotscope counts with the model's own)")
        self._tokenizer = HFTokenizer(folder / "tokenizer.json")
        self._vllm = module
        self._max_model_len = self.context_window
        self._llm: Any = None
        self._digest = folder_digest(folder)

    def tokenizer(self) -> HFTokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        """Size the engine's window (its KV budget per sequence) to the longest prompt of the run."""
        self._max_model_len = min(max_prompt_tokens + max_new_tokens, self.context_window)

    def _load(self) -> Any:
        if self._llm is None:
            self._llm = self._vllm.LLM(
                model=str(self.folder),
                tokenizer=str(self.folder),
                enable_prefix_caching=True,
                max_model_len=self._max_model_len,
                seed=self.seed,
                dtype=self.options.dtype,
                gpu_memory_utilization=self.options.gpu_memory_utilization,
                tensor_parallel_size=self.options.tensor_parallel_size,
                enforce_eager=self.options.enforce_eager,
            )
        return self._llm

    def _generate_batch(self, requests: Sequence[GenerateRequest]) -> list[Completion]:
        from vllm.inputs import TokensPrompt

        llm = self._load()
        prompts = [TokensPrompt(prompt_token_ids=list(request.token_ids)) for request in requests]
        sampling = [
            self._vllm.SamplingParams(
                temperature=request.params.temperature,
                max_tokens=request.params.max_tokens,
                seed=request.params.seed,
                stop=list(request.stop.strings) if request.stop and request.stop.strings else None,
            )
            for request in requests
        ]
        started = time.perf_counter()
        outputs = llm.generate(prompts, sampling, use_tqdm=False)
        # The engine runs the chunk together: each call is given its share of the chunk's time.
        share = (time.perf_counter() - started) / max(len(requests), 1)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} prompts")
        return [_completion(r, output, share) for r, output in zip(requests, outputs, strict=True)]

    async def generate_batch(self, requests: Sequence[GenerateRequest]) -> list[Completion]:
        return await asyncio.to_thread(self._generate_batch, requests)

    async def generate(self, request: GenerateRequest) -> Completion:
        """One request as a batch of one (the cache controls call this); a fault is an error row."""
        try:
            return (await self.generate_batch([request]))[0]
        except Exception as error:
            return Completion(text="", error=f"{type(error).__name__}: {error}")

    def _likelihood_batch(self, requests: Sequence[LikelihoodRequest]) -> list[Likelihood]:
        from vllm.inputs import TokensPrompt

        llm = self._load()
        prompts = reading_prompts(requests)
        sampling = self._vllm.SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0)
        started = time.perf_counter()
        outputs = (
            llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in prompts], sampling, use_tqdm=False)
            if prompts
            else []
        )
        share = (time.perf_counter() - started) / max(len(requests), 1)
        if len(outputs) != len(prompts):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(prompts)} prompts")
        return readings(requests, prompts, outputs, share)

    async def likelihood_batch(self, requests: Sequence[LikelihoodRequest]) -> list[Likelihood]:
        """One reading per request, in order; the chunk's forms go to the engine together. An
        exception fails the whole chunk (each request an error row), as ``generate_batch`` does."""
        return await asyncio.to_thread(self._likelihood_batch, requests)

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """One reading as a batch of one; a fault is an error reading."""
        try:
            return (await self.likelihood_batch([request]))[0]
        except Exception as error:
            return Likelihood(error=f"{type(error).__name__}: {error}")

    def clear_cache(self) -> None:
        """Forget every cached prefix: the next prompt is evaluated from scratch."""
        if self._llm is not None:
            self._llm.reset_prefix_cache()

    def describe(self) -> BackendDescription:
        return {
            "backend": "vllm",
            "model_folder": str(self.folder),
            "model_digest": self._digest,
            "engine_version": str(getattr(self._vllm, "__version__", "unknown")),
            "tokenizer": self._tokenizer.name,
            "tokenizer_digest": self._tokenizer.digest(),
            "template_digest": hashlib.sha256(self._tokenizer.template.encode()).hexdigest()[:16],
            "context_window": self.context_window,  # what compare shows lengths against
            "options": self.options.model_dump(),
        }

    def close(self) -> None:
        self._llm = None


def _completion(request: GenerateRequest, output: Any, latency_s: float) -> Completion:
    """A row's completion from one ``RequestOutput``: an error when the ids the engine ran are not ours."""
    sent = request.token_ids
    echoed = list(output.prompt_token_ids or ())
    differ = first_difference(sent, echoed)
    if differ is not None:
        return Completion(
            text="",
            latency_s=latency_s,
            error=(
                f"vLLM ran other prompt ids than the verified ones: they differ at position {differ} "
                f"of {len(sent)} (sent {_at(sent, differ)}, echoed {_at(echoed, differ)})"
            ),
        )
    if not output.outputs:
        return Completion(text="", latency_s=latency_s, error="vLLM returned no completion")
    generated = output.outputs[0]
    return Completion(
        text=str(generated.text),
        prompt_tokens=len(echoed),
        completion_tokens=len(generated.token_ids),
        cached_tokens=int(output.num_cached_tokens or 0),
        latency_s=latency_s,
    )


def reading_prompts(requests: Sequence[LikelihoodRequest]) -> list[list[int]]:
    """The prompts that read ``requests``: each request's prompt with each of its forms after it,
    request by request, form by form."""
    return [[*request.token_ids, *form] for request in requests for form in request.continuations]


def form_logprobs(prompt_logprobs: Sequence[Any] | None, form: Sequence[int]) -> tuple[float, ...]:
    """The form's tokens' log-probabilities from the last ``len(form)`` entries of a
    ``RequestOutput.prompt_logprobs`` (one per prompt token, ``None`` for the first; each a mapping
    of token id to a ``Logprob`` with ``.logprob``); ``ValueError`` naming what is missing."""
    entries = list(prompt_logprobs or ())
    if len(entries) < len(form):
        raise ValueError(
            f"vLLM returned {len(entries)} prompt log-probabilities for a {len(form)}-token form"
        )
    found: list[float] = []
    for entry, token in zip(entries[len(entries) - len(form) :], form, strict=True):
        value = None if entry is None else entry.get(token)
        if value is None:
            raise ValueError(f"vLLM returned no prompt log-probability for answer token {token}")
        found.append(float(getattr(value, "logprob", value)))
    return tuple(found)


def readings(
    requests: Sequence[LikelihoodRequest],
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[Any],
    latency_s: float,
) -> list[Likelihood]:
    """Each request's ``Likelihood`` from the outputs of its forms' prompts (``reading_prompts``'
    order): an error reading where the engine ran other ids than sent or a form's log-probability
    is missing."""
    read: list[Likelihood] = []
    position = 0
    for request in requests:
        forms: list[tuple[float, ...]] = []
        error = None
        for form in request.continuations:
            sent, output = prompts[position], outputs[position]
            position += 1
            if error is not None:
                continue
            echoed = list(output.prompt_token_ids or ())
            differ = first_difference(sent, echoed)
            if differ is not None:
                error = (
                    f"vLLM ran other prompt ids than the verified ones: they differ at position {differ} "
                    f"of {len(sent)} (sent {_at(sent, differ)}, echoed {_at(echoed, differ)})"
                )
                continue
            try:
                forms.append(form_logprobs(output.prompt_logprobs, form))
            except ValueError as missing:
                error = str(missing)
        if error is not None:
            read.append(Likelihood(latency_s=latency_s, error=error))
        else:
            read.append(
                Likelihood(
                    token_logprobs=tuple(forms), prompt_tokens=len(request.token_ids), latency_s=latency_s
                )
            )
    return read


def _at(ids: Sequence[int], position: int) -> str:
    return str(ids[position]) if position < len(ids) else "nothing"


@register_backend(
    "vllm",
    likelihood="reads answer likelihoods: prompt_logprobs of each form after the prompt, a chunk at once",
    hint="vllm/PATH: vLLM in this process on a local model folder (config.json, weights, "
    "tokenizer.json), never a hub download; pip install rotscope[vllm]",
)
def vllm_backend(name: str, config: ExperimentConfig) -> VllmBackend:
    folder = Path(name).expanduser()
    if not folder.is_dir():
        raise BadInput(f"model: vllm/ needs a local model folder; {name!r} is not one")
    return VllmBackend(folder, config.section(VllmOptions), config.generation.seed, import_vllm())
