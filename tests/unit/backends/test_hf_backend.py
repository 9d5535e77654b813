"""The hf/ backend on a tiny random-weight Llama built from a config: the KV cache kept between
prompts is cropped to the shared prefix, and what is evaluated after the crop gives the logits and
answers a cold cache gives; a model folder on disk loads offline; bad names are bad input."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rotscope.backends import create_backend  # noqa: E402
from rotscope.backends.hf.backend import (  # noqa: E402
    HfBackend,
    KvCachedModel,
    require_extra,
    resolve_model,
    reusable_prefix,
)
from rotscope.config.experiment import build_config  # noqa: E402
from rotscope.errors import BadInput  # noqa: E402
from rotscope.types import GenerateRequest, GenerationParams, LikelihoodRequest  # noqa: E402
from tests.support.cli_helpers import assert_bad_input, invoke  # noqa: E402

VOCAB = 64


@pytest.fixture(scope="module")
def tiny_model() -> Any:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval()


def _prompt(seed: int, size: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    return [int(token) for token in torch.randint(3, VOCAB, (size,), generator=generator)]


def _logits(kv: KvCachedModel, prompt: list[int], reuse: bool = True) -> tuple[Any, int]:
    with torch.inference_mode():
        return kv.prefill(prompt, reuse)


def test_reusable_prefix_is_the_common_prefix_but_never_the_last_prompt_token() -> None:
    assert reusable_prefix([5, 6, 7, 8], [5, 6, 9, 9]) == 2
    assert reusable_prefix([5, 6, 7], [5, 6, 7]) == 2  # its last token is evaluated again
    assert reusable_prefix([5, 6, 7], [5, 6, 7, 8, 9]) == 3
    assert reusable_prefix([], [5, 6]) == 0
    assert reusable_prefix([4], [5, 6]) == 0


def test_the_cache_is_cropped_to_the_shared_prefix_and_gives_the_cold_logits(tiny_model: Any) -> None:
    shared = _prompt(0, 40)
    first, second = shared + _prompt(1, 12), shared + _prompt(2, 9)
    warm = KvCachedModel(tiny_model, "cpu")
    _logits(warm, first)
    assert warm.ids == first and warm.cache.get_seq_length() == len(first)

    logits, cached = _logits(warm, second)
    assert cached == len(shared)
    assert warm.ids == second and warm.cache.get_seq_length() == len(second)
    cold_logits, cold_cached = _logits(KvCachedModel(tiny_model, "cpu"), second)
    assert cold_cached == 0
    assert torch.allclose(logits, cold_logits, atol=1e-5)

    again, cached = _logits(warm, second)  # the same prompt: all but its last token reused
    assert cached == len(second) - 1 and torch.allclose(again, cold_logits, atol=1e-5)


def test_reuse_off_evaluates_every_prompt_cold(tiny_model: Any) -> None:
    kv = KvCachedModel(tiny_model, "cpu")
    prompt = _prompt(3, 30)
    _logits(kv, prompt, reuse=False)
    _, cached = _logits(kv, prompt, reuse=False)
    assert cached == 0 and kv.cache.get_seq_length() == len(prompt)


def test_a_prompt_fed_in_chunks_gives_the_logits_of_one_pass(tiny_model: Any) -> None:
    prompt = _prompt(4, 50)
    chunked, _ = _logits(KvCachedModel(tiny_model, "cpu", chunk=7), prompt)
    whole, _ = _logits(KvCachedModel(tiny_model, "cpu"), prompt)
    assert torch.allclose(chunked, whole, atol=1e-5)


def test_answers_after_a_cropped_cache_are_the_cold_answers(tiny_model: Any) -> None:
    shared = _prompt(5, 60)
    prompts = [shared + _prompt(6 + n, 5 + n) for n in range(4)]
    warm = KvCachedModel(tiny_model, "cpu")
    warm_answers = [warm.generate(p, 6, frozenset(), 0.0, 0, reuse=True) for p in prompts]
    cold_answers = [
        KvCachedModel(tiny_model, "cpu").generate(p, 6, frozenset(), 0.0, 0, reuse=True) for p in prompts
    ]
    assert [answer for answer, _ in warm_answers] == [answer for answer, _ in cold_answers]
    assert [cached for _, cached in warm_answers] == [0, 60, 60, 60]
    assert all(len(answer) == 6 for answer, _ in warm_answers)


def test_generation_ends_before_a_stop_token(tiny_model: Any) -> None:
    prompt = _prompt(7, 20)
    answer, _ = KvCachedModel(tiny_model, "cpu").generate(prompt, 8, frozenset(), 0.0, 0, reuse=True)
    stopped, _ = KvCachedModel(tiny_model, "cpu").generate(
        prompt, 8, frozenset({answer[2]}), 0.0, 0, reuse=True
    )
    assert stopped == answer[: answer.index(answer[2])]


def test_sampling_is_seeded(tiny_model: Any) -> None:
    prompt = _prompt(8, 20)
    runs = [
        KvCachedModel(tiny_model, "cpu").generate(prompt, 8, frozenset(), 1.5, seed, True)[0]
        for seed in (1, 1, 2)
    ]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def _cold_logprobs(model: Any, prompt: list[int], form: list[int]) -> list[float]:
    """Each form token's log-probability from one cacheless pass over prompt and form."""
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt + form])).logits[0].double()
    rows = torch.log_softmax(logits, dim=-1)
    return [float(rows[len(prompt) - 1 + index, token]) for index, token in enumerate(form)]


def test_a_reading_is_the_cold_log_probability_of_each_form_and_leaves_the_prompt_cached(
    tiny_model: Any,
) -> None:
    shared = _prompt(10, 30)
    prompt = shared + _prompt(11, 6)
    forms = [_prompt(12, 4), _prompt(13, 1), _prompt(14, 3)]
    warm = KvCachedModel(tiny_model, "cpu")
    _logits(warm, shared + _prompt(15, 5))  # an earlier prompt sharing ``shared``
    read, cached = warm.read(prompt, forms, reuse=True)
    assert cached == len(shared)
    for form, logprobs in zip(forms, read, strict=True):
        assert logprobs == pytest.approx(_cold_logprobs(tiny_model, prompt, form), abs=1e-5)
        assert all(value < 0 for value in logprobs)
    assert warm.ids == prompt and warm.cache.get_seq_length() == len(prompt)
    answer, cached = warm.generate(prompt, 4, frozenset(), 0.0, 0, reuse=True)
    assert cached == len(prompt) - 1
    assert answer == KvCachedModel(tiny_model, "cpu").generate(prompt, 4, frozenset(), 0.0, 0, True)[0]


@pytest.fixture(scope="module")
def model_folder(tiny_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model saved as a Hugging Face folder with a word-level tokenizer.json."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder = tmp_path_factory.mktemp("tiny-llama")
    tiny_model.save_pretrained(folder)
    words = {f"w{n}": n for n in range(VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(words, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}), encoding="utf-8")
    return folder


def test_a_model_folder_loads_offline_and_reuses_its_cache(model_folder: Path) -> None:
    backend = create_backend(
        build_config({"model": f"hf/{model_folder}", "hf": {"device": "cpu", "n_threads": 1}})
    )
    assert isinstance(backend, HfBackend) and backend.context_window == 256
    description = backend.describe()
    assert description["backend"] == "hf" and description["device"] == "cpu" and description["model_digest"]
    shared = _prompt(9, 40)
    answers = []
    for prompt in ([*shared, 5, 6], [*shared, 7, 8, 9]):
        request = GenerateRequest((), tuple(prompt), GenerationParams(max_tokens=4))
        answers.append(asyncio.run(backend.generate(request)))
    assert [a.error for a in answers] == [None, None]
    assert [a.cached_tokens for a in answers] == [0, 40]
    assert answers[1].prompt_tokens == 43 and answers[1].completion_tokens <= 4

    sent = pickle.loads(pickle.dumps(backend))  # as to an engine worker: no loaded model goes along
    assert sent._kv is None and sent._tokenizer is None
    request = GenerateRequest((), tuple([*shared, 7, 8, 9]), GenerationParams(max_tokens=4))
    assert asyncio.run(sent.generate(request)).text == answers[1].text
    backend.clear_cache()
    assert asyncio.run(backend.generate(request)).cached_tokens == 0

    assert backend.capabilities.likelihood
    read = asyncio.run(backend.likelihood(LikelihoodRequest(tuple([*shared, 7, 8, 9]), ((11, 12), (13,)))))
    assert read.error is None and read.prompt_tokens == 43 and [len(f) for f in read.token_logprobs] == [2, 1]
    empty = asyncio.run(backend.likelihood(LikelihoodRequest((), ((11,),))))
    assert empty.error == "ValueError: an empty prompt" and not empty.token_logprobs
    backend.close()


def test_a_path_that_is_not_local_is_bad_input_naming_it(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"HuggingFaceTB/SmolLM2-135M.*never downloaded"):
        resolve_model("HuggingFaceTB/SmolLM2-135M")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match=r"no config\.json"):
        resolve_model(str(tmp_path / "empty"))
    (tmp_path / "weights.gguf").write_bytes(b"not gguf")
    with pytest.raises(BadInput, match="not a GGUF file"):
        resolve_model(str(tmp_path / "weights.gguf"))


def test_the_cli_refuses_a_missing_model_path_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    result = invoke("run", "--model", f"hf/{missing}", "--out", tmp_path / "out")
    assert_bad_input(result, str(missing))


def test_a_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a)
    )
    with pytest.raises(BadInput, match=r"need gguf: pip install rotscope\[hf\]"):
        require_extra()
