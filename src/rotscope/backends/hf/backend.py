"""Hugging Face transformers backend (``hf/PATH``; extra ``rotscope[hf]``): a causal LM from a
local model folder, or from a local GGUF file through transformers' ``gguf_file=`` loading
(dequantized to ``hf.dtype``). Nothing is ever downloaded: a name that is not a local path is bad
input. ``hf/bundled`` is the bundled SmolLM2 GGUF, so the engine can be tried with no download.

The model receives the verified prompt ids themselves: a GGUF file's are read with llama.cpp's
tokenizer (the one every ``llamacpp/`` run uses; transformers' tokenizer converted from the same
file gives the same ids, as the integration tests check), a folder's with its ``tokenizer.json``.
Like the llama.cpp backend it keeps the KV cache of the previous prompt, cropped to the prefix the
next one shares, so a grid in trie order evaluates each distinct prefix once. It reads the gold
answer's likelihood (``ReadsLikelihood``) on the same cache: the prompt is prefilled (its cached
prefix kept), each answer form fed after it in one pass whose logits are all kept, and the cache
cropped back to the prompt before the next form.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rotscope._util.cpus import usable_cpus
from rotscope._util.quiet import quiet_stderr
from rotscope._util.tokens import common_prefix
from rotscope.answer_stop import answer_end
from rotscope.backends import register_backend
from rotscope.backends.hf.options import HfOptions
from rotscope.backends.llamacpp.backend import bundled_model_path
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput
from rotscope.tokenizers.gguf import check_gguf, file_digest
from rotscope.tokenizers.local import LlamaCppTokenizer
from rotscope.tokenizers.remote import HFTokenizer
from rotscope.types import (
    BackendDescription,
    Capabilities,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    Tokenizer,
)

EXTRA_PACKAGES = ("torch", "transformers", "gguf", "accelerate")
PREFILL_CHUNK = 2048
"""Prompt tokens per forward pass: bounds the attention scores held at once (a 32K-token prompt in
one pass would need tens of GiB for them) at no measurable cost in speed."""
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_WINDOW_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def require_extra() -> None:
    """Bad input naming the extra when a package of ``rotscope[hf]`` is missing (found without
    importing it, so planning a run costs no torch import)."""
    missing = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise BadInput(f"model: hf/ models need {', '.join(missing)}: pip install rotscope[hf]")


def reusable_prefix(cached: Sequence[int], prompt: Sequence[int]) -> int:
    """How many cached tokens the next prompt can keep: their common prefix, but never the whole
    prompt, since its last token must be evaluated again to give the logits of the first answer token."""
    return common_prefix(cached, prompt[:-1])


class KvCachedModel:
    """A causal LM and the KV cache of the ids it evaluated last (prompt and fed answer tokens)."""

    def __init__(self, model: Any, device: str, chunk: int = PREFILL_CHUNK) -> None:
        self.model = model
        self.device = device
        self.chunk = chunk
        self.ids: list[int] = []
        self.cache: Any = None
        parameters = inspect.signature(model.forward).parameters
        self._cache_name = "cache" if "cache" in parameters else "past_key_values"
        """transformers 5.24 renamed the ``past_key_values`` argument and output to ``cache``."""

    def reset(self) -> None:
        self.ids, self.cache = [], None

    def prefill(self, prompt: Sequence[int], reuse: bool) -> tuple[Any, int]:
        """The logits after ``prompt`` and how many of its tokens came from the cache."""
        keep = reusable_prefix(self.ids, prompt) if reuse else 0
        if keep == 0:
            self.reset()
        elif keep < len(self.ids):
            self.cache.crop(keep - len(self.ids))  # a negative count removes that many, in every version
            del self.ids[keep:]
        logits = None
        for start in range(keep, len(prompt), self.chunk):
            logits = self.feed(prompt[start : start + self.chunk])
        return logits, keep

    def feed(self, ids: Sequence[int], keep: int = 1) -> Any:
        """Evaluate ``ids`` after the cached ones; the logits of the last (``keep`` > 1: of the last
        ``keep``, one row each)."""
        import torch

        inputs = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        output = self.model(
            input_ids=inputs, use_cache=True, logits_to_keep=keep, **{self._cache_name: self.cache}
        )
        self.cache = getattr(output, self._cache_name)
        self.ids.extend(ids)
        return output.logits[0, -1] if keep == 1 else output.logits[0, -keep:]

    def crop(self, length: int) -> None:
        """Forget every evaluated id past the first ``length``."""
        if length < len(self.ids):
            self.cache.crop(length - len(self.ids))
            del self.ids[length:]

    def read(
        self, prompt: Sequence[int], forms: Sequence[Sequence[int]], reuse: bool
    ) -> tuple[list[tuple[float, ...]], int]:
        """Each form's token log-probabilities teacher-forced after ``prompt`` (natural log, in
        float64 from the model's logits) and the prompt tokens that came from the cache. The cache
        holds the prompt afterwards, so a generation of the same prompt reuses all of it."""
        import torch

        read: list[tuple[float, ...]] = []
        with torch.inference_mode():
            logits, cached = self.prefill(prompt, reuse)
            first = torch.log_softmax(logits.double(), dim=-1)
            for form in forms:
                if not form:
                    read.append(())
                    continue
                logprobs = [float(first[form[0]])]
                if len(form) > 1:
                    rows = torch.log_softmax(self.feed(form[:-1], keep=len(form) - 1).double(), dim=-1)
                    rows = rows.reshape(len(form) - 1, -1)
                    logprobs += [float(rows[index, token]) for index, token in enumerate(form[1:])]
                    self.crop(len(prompt))
                read.append(tuple(logprobs))
        return read, cached

    def generate(
        self, prompt: Sequence[int], max_tokens: int, stop: frozenset[int], temperature: float, seed: int,
        reuse: bool, done: Callable[[list[int]], bool] | None = None,
    ) -> tuple[list[int], int]:  # fmt: skip
        """Answer ids (up to ``max_tokens``, ending before a stop token, or with the token after
        which ``done`` says the answer is complete) and the cached prompt tokens. Greedy at
        temperature 0, else sampled from a generator seeded by ``seed``."""
        import torch

        generator = None
        if temperature > 0:
            generator = torch.Generator(device=self.device).manual_seed(seed)
        with torch.inference_mode():
            logits, cached = self.prefill(prompt, reuse)
            answer: list[int] = []
            while len(answer) < max_tokens:
                if generator is None:
                    token = int(torch.argmax(logits))
                else:
                    probabilities = torch.softmax(logits.float() / temperature, dim=-1)
                    token = int(torch.multinomial(probabilities, 1, generator=generator))
                if token in stop:
                    break
                answer.append(token)
                if done is not None and done(answer):
                    break
                if len(answer) < max_tokens:
                    logits = self.feed([token])
        return answer, cached


def resolve_model(name: str) -> Path:
    """The local folder or GGUF file ``hf/NAME`` names (``bundled``: the bundled GGUF)."""
    if name == "bundled":
        return bundled_model_path()
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise BadInput(f"model: hf/{name}: folder {path} has no config.json (not a model folder)")
        return path
    if path.is_file():
        check_gguf(path)
        return path
    raise BadInput(
        f"model: hf/{name}: {path} is neither a local model folder nor a GGUF file "
        "(hub names are never downloaded; download the model and give its folder)"
    )


def folder_digest(path: Path) -> str:
    """The model folder's config and the digest of each weight file: identifies it quickly."""
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(p for p in path.iterdir() if p.suffix in _WEIGHT_SUFFIXES):
        digest.update(f"{weights.name}:{file_digest(weights)}".encode())
    return digest.hexdigest()[:16]


def _folder_window(path: Path) -> int:
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    config = config.get("text_config", config)
    return next((int(config[key]) for key in _WINDOW_KEYS if isinstance(config.get(key), int)), 0)


def _folder_tokenizer(path: Path) -> HFTokenizer:
    tokenizer_file = path / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise BadInput(f"model: {path} has no tokenizer.json (hf/ models need the fast tokenizer's file)")
    return HFTokenizer(tokenizer_file)


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """transformers' progress bars and warnings (GGUF dequantization) kept off the run's output."""
    logging: Any = importlib.import_module("transformers.utils.logging")  # untyped calls
    logging.disable_progress_bar()
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        with quiet_stderr():
            yield
    finally:
        logging.set_verbosity(verbosity)


class HfBackend:
    """transformers on torch, in a worker process of its own (pickled without the loaded model)."""

    capabilities = Capabilities(
        local=True,
        exact_ids=True,
        max_concurrency=1,
        clearable_cache=True,
        worker_process=True,
        likelihood=True,
    )

    def __init__(self, path: Path, options: HfOptions) -> None:
        require_extra()
        self.path = path
        self.options = options
        self.model_id = f"hf/{path}"
        self.gguf = path.is_file()
        self._tokenizer: Tokenizer | None
        if self.gguf:
            llama_tokenizer = LlamaCppTokenizer(path)
            self._tokenizer = llama_tokenizer
            self.context_window = llama_tokenizer.context_window
            self._digest = file_digest(path)
            self._template = llama_tokenizer.template
            self._eos = {llama_tokenizer._llama.token_eos()}
        else:
            folder_tokenizer = _folder_tokenizer(path)
            self._tokenizer = folder_tokenizer
            self.context_window = _folder_window(path)
            self._digest = folder_digest(path)
            self._template = folder_tokenizer.template
            self._eos = set()
        self._tokenizer_name = self._tokenizer.name
        self._tokenizer_digest = self._tokenizer.digest()
        self.device = self._resolve_device()
        self._kv: KvCachedModel | None = None
        self._stop: frozenset[int] = frozenset()

    def __getstate__(self) -> dict[str, Any]:
        # The worker only generates: it loads the model itself and decodes with the tokenizer it
        # needs then; the run's process keeps the tokenizer.
        return {**self.__dict__, "_kv": None, "_tokenizer": None}

    def _resolve_device(self) -> str:
        if self.options.device != "auto":
            return self.options.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = LlamaCppTokenizer(self.path) if self.gguf else _folder_tokenizer(self.path)
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        """Nothing to size: the cache grows with the prompt (the planner keeps prompts in the window)."""

    def _load(self) -> KvCachedModel:
        if self._kv is None:
            os.environ["HF_HUB_OFFLINE"] = "1"  # never reach the hub, whatever a config file names
            import torch

            transformers: Any = importlib.import_module("transformers")
            torch.set_num_threads(self.options.n_threads or len(usable_cpus()))
            where = {"gguf_file": self.path.name} if self.gguf else {}
            folder = self.path.parent if self.gguf else self.path
            with _quiet_loading():
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(folder), local_files_only=True, dtype=getattr(torch, self.options.dtype), **where
                )
            model.to(self.device).eval()
            stop = model.generation_config.eos_token_id
            stops = stop if isinstance(stop, list) else [] if stop is None else [stop]
            self._stop = frozenset(self._eos | set(stops))
            self._kv = KvCachedModel(model, self.device)
        return self._kv

    def _generate(self, request: GenerateRequest) -> Completion:
        started = time.perf_counter()
        try:
            kv = self._load()
            params, stop, decode = request.params, request.stop, self.tokenizer().decode
            answer, cached = kv.generate(
                request.token_ids, params.max_tokens, self._stop, params.temperature, params.seed,
                reuse=self.options.prefix_cache,
                done=None if stop is None else lambda ids: answer_end(decode(ids), stop) is not None,
            )  # fmt: skip
            text = decode(answer)
            end = None if stop is None else answer_end(text, stop)
            return Completion(
                text=text if end is None else text[:end],
                prompt_tokens=len(request.token_ids),
                completion_tokens=len(answer),
                cached_tokens=cached,
                latency_s=time.perf_counter() - started,
                engine_mode=f"device={self.device},dtype={self.options.dtype}",
            )
        except Exception as error:  # recorded as an error row, never scored
            return Completion(
                text="", latency_s=time.perf_counter() - started, error=f"{type(error).__name__}: {error}"
            )

    async def generate(self, request: GenerateRequest) -> Completion:
        return await asyncio.to_thread(self._generate, request)

    def _likelihood(self, request: LikelihoodRequest) -> Likelihood:
        started = time.perf_counter()
        try:
            if not request.token_ids:
                raise ValueError("an empty prompt")
            forms, _ = self._load().read(
                request.token_ids, request.continuations, reuse=self.options.prefix_cache
            )
            return Likelihood(
                token_logprobs=tuple(forms),
                prompt_tokens=len(request.token_ids),
                latency_s=time.perf_counter() - started,
            )
        except Exception as error:  # recorded as an error row, never scored
            return Likelihood(
                latency_s=time.perf_counter() - started, error=f"{type(error).__name__}: {error}"
            )

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        """Each answer form's token log-probabilities after the prompt (``KvCachedModel.read``)."""
        return await asyncio.to_thread(self._likelihood, request)

    def clear_cache(self) -> None:
        """Forget the KV cache: the next prompt is evaluated from scratch."""
        if self._kv is not None:
            self._kv.reset()

    def describe(self) -> BackendDescription:
        return {
            "backend": "hf",
            "model_file": str(self.path),
            "model_digest": self._digest,
            "tokenizer": self._tokenizer_name,
            "tokenizer_digest": self._tokenizer_digest,
            "template_digest": hashlib.sha256(self._template.encode()).hexdigest()[:16],
            "device": self.device,
            "versions": {name: _package_version(name) for name in ("torch", "transformers")},
            "context_window": self.context_window,  # what compare shows lengths against
            "options": self.options.model_dump(),
        }

    def close(self) -> None:
        if self._kv is not None:
            self._kv = None
            if self.device == "cuda":
                import torch

                torch.cuda.empty_cache()


def _local_models() -> list[str]:
    try:
        return [f"bundled -> {bundled_model_path()} (as hf/bundled)"]
    except BadInput as error:
        return [f"bundled model unavailable: {error}"]


@register_backend(
    "hf",
    likelihood="reads answer likelihoods: each form fed after the prompt on its KV cache",
    hint="transformers on CPU or CUDA (pip install rotscope[hf]): hf/FOLDER, hf/FILE.gguf or hf/bundled",
    models=_local_models,
)
def hf_backend(name: str, config: ExperimentConfig) -> HfBackend:
    return HfBackend(resolve_model(name), config.section(HfOptions))
