"""The ``vllm/PATH`` backend against a small stand-in for the ``vllm`` package, put in
``sys.modules`` by each test: the stand-in answers as ``fake/lexical`` from the ids it is sent
(decoded with the folder's tokenizer) and reports a prefix cache's hits, so request shape, ids,
cached tokens, echoed-id checks and batch failures can be checked without vLLM or a GPU. Asked for
``prompt_logprobs``, it gives each prompt token after the first the log-probability ``standin_logprob``
of its id, so the answer likelihood a run stores can be recomputed."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rotscope._util.tokens import common_prefix
from rotscope.backends.fake import lexical_responder
from rotscope.backends.vllm.backend import VllmBackend, first_difference
from rotscope.backends.vllm.options import VllmOptions
from rotscope.config.experiment import build_config
from rotscope.execution.calls.likelihood import likelihood_request
from rotscope.execution.workflows.runner import resume_experiment, run_experiment
from rotscope.plan.workitems import build_plan
from rotscope.store import RunStore
from rotscope.tokenizers.remote import HFTokenizer
from rotscope.types import GenerateRequest, GenerationParams
from tests.support.cli_helpers import assert_bad_input, bpe_tokenizer_folder, invoke, nonsense_corpus

BLOCK = 16
"""The stand-in's cache block: cached prefixes count in whole blocks, as vLLM's do."""
GRID = {"tasks": ["niah"], "lengths": [1000, 2000], "depths": ["beginning", "end"], "limit": 3}


@dataclass
class Engine:
    """What the stand-in saw and how it misbehaves: ``echo`` rewrites the ids it reports having
    run; ``fail_calls`` are the ``generate`` calls (counted from 1) that raise."""

    made: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[list[dict[str, Any]], list[Any]]] = field(default_factory=list)
    echo: Any = None
    fail_calls: set[int] = field(default_factory=set)
    resets: int = 0


def standin(engine: Engine) -> tuple[types.ModuleType, types.ModuleType]:
    """A ``vllm`` module (``LLM``, ``SamplingParams``) and its ``vllm.inputs`` (``TokensPrompt``)."""

    @dataclass
    class SamplingParams:
        temperature: float = 1.0
        max_tokens: int = 16
        seed: int | None = None
        prompt_logprobs: int | None = None
        stop: list[str] | None = None

    @dataclass
    class Logprob:
        logprob: float

    @dataclass
    class CompletionOutput:
        text: str
        token_ids: list[int]

    @dataclass
    class RequestOutput:
        prompt_token_ids: list[int]
        outputs: list[CompletionOutput]
        num_cached_tokens: int | None
        prompt_logprobs: list[dict[int, Any] | None] | None = None

    class LLM:
        def __init__(self, **kwargs: Any) -> None:
            engine.made.append(kwargs)
            self.tokenizer = HFTokenizer(Path(kwargs["tokenizer"]) / "tokenizer.json")
            self.seen: list[list[int]] = []

        def generate(self, prompts: list[dict[str, Any]], params: Any, use_tqdm: bool) -> list[Any]:
            params = params if isinstance(params, list) else [params] * len(prompts)
            engine.calls.append((prompts, params))
            if len(engine.calls) in engine.fail_calls:
                raise RuntimeError("CUDA out of memory (stand-in)")
            outputs = []
            for prompt in prompts:
                ids = prompt["prompt_token_ids"]
                hit = max((common_prefix(ids, before) for before in self.seen), default=0)
                self.seen.append(ids)
                text = lexical_responder()(
                    GenerateRequest(
                        ({"role": "user", "content": self.tokenizer.decode(ids)},), (), GenerationParams()
                    )
                )
                echoed = engine.echo(ids) if engine.echo else list(ids)
                output = CompletionOutput(text, self.tokenizer.encode(text))
                logprobs = None
                if params[0].prompt_logprobs is not None:
                    logprobs = [None] + [{token: Logprob(standin_logprob(token))} for token in echoed[1:]]
                outputs.append(RequestOutput(echoed, [output], hit // BLOCK * BLOCK, logprobs))
            return outputs

        def reset_prefix_cache(self) -> None:
            engine.resets += 1
            self.seen.clear()

    module = types.ModuleType("vllm")
    module.LLM = LLM  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    module.__version__ = "0.0-standin"  # type: ignore[attr-defined]
    inputs = types.ModuleType("vllm.inputs")

    def tokens_prompt(*, prompt_token_ids: list[int]) -> dict[str, Any]:
        return {"prompt_token_ids": prompt_token_ids}

    inputs.TokensPrompt = tokens_prompt  # type: ignore[attr-defined]
    module.inputs = inputs  # type: ignore[attr-defined]
    return module, inputs


def standin_logprob(token: int) -> float:
    """The stand-in's log-probability of a prompt token: known, and different between tokens."""
    return -0.1 * (1 + token % 5)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    made = Engine()
    module, inputs = standin(made)
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    yield made


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder as vLLM reads one: config.json (a 32K window) and a byte-level BPE
    tokenizer.json trained on the test corpus, with its chat template beside it."""
    root = tmp_path_factory.mktemp("vllm")
    folder = bpe_tokenizer_folder(root / "model", nonsense_corpus(root / "corpus"))
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    return folder


def experiment(folder: Path, **extra: Any) -> Any:
    corpus = folder.parent / "corpus"
    return build_config(
        {
            "name": "vllm",
            "model": f"vllm/{folder}",
            "filler": {"kind": "text", "glob": str(corpus / "*.txt"), "allow_repeat": True},
            "score": "accuracy",  # the replies alone, unless a test reads likelihoods
            **GRID,
            **extra,
        }
    )


def stored(run_dir: Path) -> list[dict[str, Any]]:
    with RunStore.read(run_dir) as store:
        return [dict(row) for row in store.rows()]


def test_prompts_go_as_the_verified_ids_in_batches_with_greedy_seeded_params(
    engine: Engine, model_folder: Path, tmp_path: Path
) -> None:
    config = experiment(model_folder, vllm={"batch_size": 5}, generation={"max_tokens": 12, "seed": 7})
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    sent = [prompt["prompt_token_ids"] for prompts, _ in engine.calls for prompt in prompts]
    planned = build_plan(
        config, VllmBackend(model_folder, config.section(VllmOptions), 7, sys.modules["vllm"])
    ).items

    assert sorted(map(tuple, sent)) == sorted(item.prompt.token_ids for item in planned)
    assert [len(prompts) for prompts, _ in engine.calls] == [5] * (len(sent) // 5) + (
        [len(sent) % 5] if len(sent) % 5 else []
    )
    params = {(p.temperature, p.max_tokens, p.seed) for _, batch in engine.calls for p in batch}
    assert params == {(0.0, 12, 7)}
    (made,) = engine.made
    assert made["model"] == made["tokenizer"] == str(model_folder)
    assert made["enable_prefix_caching"] is True and made["seed"] == 7
    assert made["max_model_len"] == max(map(len, sent)) + 12  # reserved for the longest prompt

    rows = stored(run_dir)
    assert {row["status"] for row in rows} == {"ok"}
    assert {row["outcome"] for row in rows} == {"correct"}  # needles found, absent controls abstained
    assert any(row["control"] for row in rows)
    assert all(row["usage_prompt_tokens"] == row["prompt_tokens"] for row in rows)


def test_cached_tokens_are_the_engines_own_count(engine: Engine, model_folder: Path, tmp_path: Path) -> None:
    run_dir = run_experiment(experiment(model_folder), run_dir=tmp_path / "run")
    sent = [prompt["prompt_token_ids"] for prompts, _ in engine.calls for prompt in prompts]
    expected = {}
    for number, ids in enumerate(sent):
        hit = max((common_prefix(ids, before) for before in sent[:number]), default=0)
        expected[tuple(ids)] = hit // BLOCK * BLOCK
    with RunStore.read(run_dir) as store:
        by_prompt = {row["prompt_tokens"]: row["cached_tokens"] for row in store.rows()}
    assert sum(expected.values()) > 0  # the trie order lets later prompts hit the cache
    assert sorted(by_prompt.values()) == sorted({len(ids): hit for ids, hit in expected.items()}.values())


def test_echoed_ids_that_differ_make_an_error_row_naming_the_position(
    engine: Engine, model_folder: Path, tmp_path: Path
) -> None:
    engine.echo = lambda ids: [*ids[:9], ids[9] + 1, *ids[10:]]
    rows = stored(run_experiment(experiment(model_folder), run_dir=tmp_path / "run"))
    assert {row["status"] for row in rows} == {"error"}
    assert all("differ at position 9 of" in row["error"] for row in rows)
    assert first_difference([1, 2, 3], [1, 2]) == 2 and first_difference([1, 2], [1, 2]) is None


def test_a_batch_that_raises_is_error_rows_that_resume_runs_again(
    engine: Engine, model_folder: Path, tmp_path: Path
) -> None:
    engine.fail_calls = {2}
    config = experiment(model_folder, vllm={"batch_size": 4})
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    second = [tuple(p["prompt_token_ids"]) for p in engine.calls[1][0]]
    rows = stored(run_dir)
    errors = [row for row in rows if row["status"] == "error"]
    assert len(second) == 4 and len(errors) == 4
    assert all("batch of 4: RuntimeError: CUDA out of memory" in row["error"] for row in errors)
    assert sorted(row["prompt_tokens"] for row in errors) == sorted(map(len, second))

    calls_before = len(engine.calls)
    resume_experiment(run_dir)
    assert {row["status"] for row in stored(run_dir)} == {"ok"}
    rerun = [tuple(p["prompt_token_ids"]) for prompts, _ in engine.calls[calls_before:] for p in prompts]
    assert sorted(rerun) == sorted(second)


def test_cache_clears_reach_the_engine(engine: Engine, model_folder: Path) -> None:
    backend = VllmBackend(
        model_folder, build_config({"name": "x"}).section(VllmOptions), 0, sys.modules["vllm"]
    )
    backend.clear_cache()  # nothing loaded yet: nothing to clear
    request = GenerateRequest(({"role": "user", "content": "hi"},), (5, 6, 7), GenerationParams())
    completion = asyncio.run(backend.generate(request))
    backend.clear_cache()
    assert completion.error is None and completion.prompt_tokens == 3
    assert engine.resets == 1


def test_a_missing_folder_or_package_is_one_line(
    monkeypatch: pytest.MonkeyPatch, model_folder: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    assert_bad_input(invoke("run", "--model", f"vllm/{missing}", "--out", tmp_path / "a"), str(missing))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    assert_bad_input(invoke("run", "--model", f"vllm/{empty}", "--out", tmp_path / "b"), "tokenizer.json")
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    missing_extra = invoke("run", "--model", f"vllm/{model_folder}", "--out", tmp_path / "c")
    assert_bad_input(missing_extra, "pip install rotscope[vllm]")


def test_likelihoods_are_read_in_chunks_as_prompt_logprobs_of_each_form(
    engine: Engine, model_folder: Path, tmp_path: Path
) -> None:
    config = experiment(model_folder, vllm={"batch_size": 4}, score="both")
    run_dir = run_experiment(config, run_dir=tmp_path / "run")
    backend = VllmBackend(model_folder, config.section(VllmOptions), 0, sys.modules["vllm"])
    planned = {item.item_id: item for item in build_plan(config, backend).items}
    reading_calls = [(prompts, ps) for prompts, ps in engine.calls if ps[0].prompt_logprobs is not None]
    assert reading_calls and {(p.max_tokens, p.prompt_logprobs) for _, ps in reading_calls for p in ps} == {
        (1, 0)
    }
    read_prompts = {tuple(p["prompt_token_ids"]) for prompts, _ in reading_calls for p in prompts}

    rows = stored(run_dir)
    assert {row["status"] for row in rows} == {"ok"}
    for row in rows:
        request = likelihood_request(planned[row["item_id"]], backend.tokenizer())
        assert request is not None
        sums = []
        for form, lead in zip(request.continuations, request.scored_from, strict=True):
            assert (*request.token_ids, *form) in read_prompts
            sums.append(sum(standin_logprob(token) for token in form[lead:]))
        assert row["answer_logprob"] == pytest.approx(max(sums))
        assert row["response"]  # a reply as well: the run keeps both


def test_a_reading_whose_echoed_ids_differ_is_an_error_row(
    engine: Engine, model_folder: Path, tmp_path: Path
) -> None:
    engine.echo = lambda ids: [*ids[:9], ids[9] + 1, *ids[10:]]
    rows = stored(run_experiment(experiment(model_folder, score="likelihood"), run_dir=tmp_path / "run"))
    assert {row["status"] for row in rows} == {"error"}
    assert all("differ at position 9 of" in row["error"] for row in rows)
    assert all(row["answer_logprob"] is None for row in rows)
