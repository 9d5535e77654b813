"""The bundled model's answer likelihood, read in process and in the engine worker: one small real
prompt (a few hundred tokens of the quick grid, its readings with the evidence's lead-in) gives
the same log-probability of every answer token in both, and a likely answer where the fact is in
the prompt."""

from __future__ import annotations

import asyncio
import math

from rotscope.backends import create_backend
from rotscope.config.experiment import build_config
from rotscope.execution.calls.likelihood import likelihood_columns, likelihood_request
from rotscope.execution.executors.worker import WorkerBackend
from rotscope.plan.workitems import build_plan
from rotscope.types import Likelihood, LikelihoodRequest


def test_the_engine_worker_reads_the_in_process_log_probabilities() -> None:
    config = build_config(
        {
            "model": "bundled",
            "tasks": ["niah"],
            "limit": 1,
            "lengths": [300],
            "depths": [0.5],
            "controls": False,
            "filler": {"kind": "readinglog"},
        }
    )
    engine = create_backend(config)
    (item,) = build_plan(config, engine).items
    request = likelihood_request(item, engine.tokenizer())
    assert isinstance(request, LikelihoodRequest) and 250 <= len(request.token_ids) <= 350
    engine.reserve(len(request.token_ids), 32)

    def read(backend: object) -> Likelihood:
        found = asyncio.run(backend.likelihood(request))  # type: ignore[attr-defined]
        assert found.error is None, found.error
        return found

    in_process = read(engine)
    engine.close()
    worker = WorkerBackend(create_backend(config))
    try:
        worker.reserve(len(request.token_ids), 32)
        in_worker = read(worker)
    finally:
        worker.close()
    assert [len(form) for form in in_worker.token_logprobs] == [len(form) for form in request.continuations]
    for ours, theirs in zip(in_process.token_logprobs, in_worker.token_logprobs, strict=True):
        assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) <= 1e-6
    answer = likelihood_columns(in_process, request.scored_from)["answer_logprob"]
    assert isinstance(answer, float) and math.exp(answer) > 0.2  # the fact is in the prompt


def test_a_reading_after_its_reply_equals_a_reading_alone() -> None:
    """``--score both`` reads after the reply (the prompt in the engine's cache), ``--score
    likelihood`` reads cold: the prompt's last token is decoded alone either way, so the two agree
    to the bit (decoded inside the prompt's batch it moved a token's log-probability by up to 0.31
    nats on the quick grid)."""
    config = build_config(
        {
            "model": "bundled",
            "tasks": ["niah"],
            "limit": 2,
            "lengths": [300],
            "depths": [0.5],
            "controls": False,
            "filler": {"kind": "readinglog"},
            "llamacpp": {"extra_buffers": "off"},
        }
    )
    after_reply, alone = create_backend(config), create_backend(config)
    items = build_plan(config, after_reply).items
    try:
        for engine in (after_reply, alone):
            engine.reserve(max(len(item.prompt.token_ids) for item in items), 32)
        for item in items:
            request = likelihood_request(item, after_reply.tokenizer())
            assert request is not None
            assert asyncio.run(after_reply.generate(item.request())).error is None
            first = asyncio.run(after_reply.likelihood(request))  # type: ignore[attr-defined]
            second = asyncio.run(alone.likelihood(request))  # type: ignore[attr-defined]
            assert first.error is None and second.error is None
            assert first.token_logprobs == second.token_logprobs
            assert first.cached_tokens == len(request.token_ids) - 1  # the reply's prompt was kept
    finally:
        after_reply.close()
        alone.close()
