"""Executing work items on the event loop: calls through cache, limits and budget, then scoring,
judging and recording each call the moment it finishes.

A local engine gets one worker, so items run in the planned (prefix-sharing) order; a remote API
gets as many workers as its provider's concurrency limit; an executor with replicas of the engine
(``ray_executor``) gives each replica a lane of its own items. A batching engine
(``BatchingBackend``: vLLM) is handed chunks of consecutive items in that order and schedules each
chunk itself; its results are still scored and recorded one by one, in order, as the chunk
returns. Everything stays on one event loop, so the run store has a single writer and a call's
rows are committed together.

A run that keeps the gold answer's likelihood (``likelihood.run_score``: ``both``, ``likelihood``)
reads it from the same engine right after the reply (``both``: the prompt's prefix is still in the
engine's cache) or in place of it (``likelihood``: a prefill, no generation); a failed reading
makes the row an error, retried on ``--resume``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Protocol

from rotscope.config.experiment import ExperimentConfig, JudgeConfig, Price
from rotscope.errors import BadInput, EngineCrashed
from rotscope.execution.calls.cost import (
    Budget,
    check_budget_price,
    completion_cost,
    estimate_cost,
    find_price,
    price_table,
    total_estimate,
)
from rotscope.execution.calls.delivery import check_delivery, delivery_tolerance
from rotscope.execution.calls.likelihood import (
    RunScore,
    likelihood_columns,
    likelihood_request,
    run_score,
)
from rotscope.execution.calls.limits import Limiters, ProviderLimiter
from rotscope.execution.calls.response_cache import ResponseCache, cache_key
from rotscope.rows import ResultValues
from rotscope.scoring.deterministic import score_parts
from rotscope.scoring.judge import (
    judge_columns,
    judge_messages,
    judge_request,
    judged_score,
    parse_verdict,
    part_reply,
    undecided,
)
from rotscope.store import RunStore
from rotscope.types import (
    Backend,
    BatchingBackend,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    ReadsLikelihood,
    ReadsLikelihoodBatch,
    Score,
    WorkItem,
)


class Reporter(Protocol):
    """Receives progress; the CLI draws a bar with it, the library passes none."""

    def start(self, items: int, prompt_tokens: int, prefill: Mapping[str, int] | None = None) -> None:
        """A batch of ``items`` calls and their prompt tokens; ``prefill``: the prompt tokens each
        call (by item id) should need evaluated, where an engine keeps shared prefixes."""
        ...

    def advance(self, item: WorkItem, completion: Completion) -> None: ...

    def finish(self) -> None: ...

    def notice(self, message: str) -> None:
        """A line on what the run is doing (planning, the engine's mode, a crash and restart)."""
        ...


@dataclass(frozen=True)
class CallResult:
    completion: Completion
    cost: float | None
    cached: bool
    likelihood: Likelihood | None = None
    """The gold answer's reading, where the run keeps it and the item has an answer to read."""


class Caller:
    """Calls one backend: answers from the response cache when it can, else reserves the call's
    estimated cost in the budget, waits for the provider's limits and calls."""

    def __init__(
        self,
        backend: Backend,
        *,
        price: Price | None,
        budget: Budget,
        limiter: ProviderLimiter | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.backend = backend
        self.price = price
        self.budget = budget
        self.limiter = limiter
        self.cache = cache
        self._identity = backend.describe()
        self._tolerance = delivery_tolerance(backend)

    def cached(self, request: GenerateRequest, trial: int) -> Completion | None:
        if self.cache is None:
            return None
        return self.cache.get(cache_key(self._identity, request, trial))

    async def call(self, request: GenerateRequest, trial: int) -> CallResult | None:
        """The call's result, or ``None`` when the budget does not allow it (nothing was sent)."""
        hit = self.cached(request, trial)
        if hit is not None:
            return CallResult(hit, 0.0, cached=True)
        estimate = estimate_cost(self.price, len(request.token_ids), request.params.max_tokens)
        if not self.budget.reserve(estimate):
            return None
        cost: float | None = None
        try:
            if self.limiter is None:
                completion = await self.backend.generate(request)
            else:
                async with self.limiter.slot(len(request.token_ids) + request.params.max_tokens):
                    completion = await self.backend.generate(request)
            cost = completion_cost(self.price, completion)
            completion = check_delivery(request, completion, self._tolerance)
        finally:
            self.budget.settle(estimate, cost)
        if self.cache is not None:
            self.cache.put(cache_key(self._identity, request, trial), completion)
        return CallResult(completion, cost, cached=False)

    async def read(self, request: LikelihoodRequest) -> tuple[Likelihood, float | None] | None:
        """The gold answer's reading and its cost (its prompt tokens at the input price), or
        ``None`` when the budget does not allow it. Never cached: a cache key would have to name
        the answer forms, and a local engine reads faster than a cache lookup is worth."""
        engine = self.backend
        if not isinstance(engine, ReadsLikelihood):
            return Likelihood(error=f"{engine.model_id}: reads no likelihoods"), None
        estimate = estimate_cost(self.price, len(request.token_ids), 0)
        if not self.budget.reserve(estimate):
            return None
        cost: float | None = None
        try:
            if self.limiter is None:
                read = await engine.likelihood(request)
            else:
                async with self.limiter.slot(len(request.token_ids)):
                    read = await engine.likelihood(request)
            cost = None if read.error is not None and not read.prompt_tokens else estimate
        finally:
            self.budget.settle(estimate, cost)
        return read, cost

    async def read_batch(
        self, engine: ReadsLikelihoodBatch, requests: Sequence[LikelihoodRequest]
    ) -> list[tuple[Likelihood, float | None]]:
        """The readings of ``requests`` sent together to a batching local engine, each with its
        cost (``[]`` when the budget does not allow the chunk). An exception from the engine makes
        each reading an error; a refusal or a crashed engine still stops the run."""
        estimate = total_estimate(self.price, [(len(r.token_ids), 0) for r in requests])
        if not self.budget.reserve(estimate):
            return []
        costs: list[float | None] = []
        try:
            try:
                reads = list(await engine.likelihood_batch(requests))
                if len(reads) != len(requests):
                    raise RuntimeError(f"{len(reads)} readings for {len(requests)} requests")
            except (BadInput, EngineCrashed):
                raise
            except Exception as error:  # the engine failed the chunk: each reading is an error row
                reads = [
                    Likelihood(error=f"batch of {len(requests)}: {type(error).__name__}: {error}")
                ] * len(requests)
            costs = [
                None
                if read.error is not None and not read.prompt_tokens
                else estimate_cost(self.price, len(r.token_ids), 0)
                for read, r in zip(reads, requests, strict=True)
            ]
        finally:
            self.budget.settle(estimate, None if None in costs or not costs else sum(c or 0.0 for c in costs))
        return list(zip(reads, costs, strict=True))

    async def call_batch(
        self, engine: BatchingBackend, requests: Sequence[GenerateRequest]
    ) -> list[CallResult]:
        """The results of ``requests`` sent together to a batching local engine (uncached, unlimited;
        the budget is reserved for the whole chunk before it goes; ``[]`` when it does not allow
        it). An exception from the engine makes every request of the chunk an error row, retried on
        ``--resume``; a refusal of the run (bad input) or a crashed engine still stops the run."""
        estimate = total_estimate(self.price, [(len(r.token_ids), r.params.max_tokens) for r in requests])
        if not self.budget.reserve(estimate):
            return []
        costs: list[float | None] = []
        try:
            try:
                completions = list(await engine.generate_batch(requests))
                if len(completions) != len(requests):
                    raise RuntimeError(f"{len(completions)} results for {len(requests)} requests")
            except (BadInput, EngineCrashed):
                raise
            except Exception as error:  # the engine failed the chunk: each of its calls is an error row
                failed = f"batch of {len(requests)}: {type(error).__name__}: {error}"
                completions = [Completion(text="", error=failed) for _ in requests]
            costs = [completion_cost(self.price, completion) for completion in completions]
        finally:
            self.budget.settle(estimate, None if None in costs else sum(c or 0.0 for c in costs))
        return [
            CallResult(check_delivery(request, completion, self._tolerance), cost, cached=False)
            for request, completion, cost in zip(requests, completions, costs, strict=True)
        ]


@dataclass
class Judge:
    caller: Caller
    config: JudgeConfig

    async def review(
        self, item: WorkItem, label: str, completion: Completion, result: Score
    ) -> tuple[Score, ResultValues, float]:
        """The row's score and judge columns; deterministic scores pass through untouched. A judge
        call that fails (or that the budget does not allow) makes the row an ``error``: its score
        is undecided, so it is left out of accuracy and judged again by ``--resume`` (a remote
        model's reply then comes from the response cache)."""
        part = dict(item.case.scored_parts())[label]
        if not undecided(result):
            return result, {}, 0.0
        messages = judge_messages(part, part_reply(item.case, label, completion))
        called = await self.caller.call(
            judge_request(self.caller.backend, messages, self.config.max_tokens), 0
        )
        if called is None:
            return JUDGE_FAILED, {"error": "judge: not called, the budget is spent"}, 0.0
        verdict = parse_verdict(called.completion.text) if called.completion.error is None else None
        columns = judge_columns(self.config.model, called.completion, verdict)
        if called.completion.error is not None:
            return JUDGE_FAILED, {**columns, "error": f"judge: {called.completion.error}"}, called.cost or 0.0
        return (judged_score(part, verdict, result) if verdict else result), columns, called.cost or 0.0


JUDGE_FAILED = Score("error", "judge")


def _with_reading(
    called: CallResult | None, request: LikelihoodRequest, read: Likelihood, cost: float | None
) -> CallResult:
    """The item's result with its reading: a ``likelihood`` run's (no reply) is the reading's
    prompt count and latency, a ``both`` run's the reply's with the reading's cost added."""
    if read.error is None:
        read = replace(read, scored_from=request.scored_from)
    if called is None:
        completion = Completion(
            text="",
            prompt_tokens=read.prompt_tokens,
            cached_tokens=read.cached_tokens,
            latency_s=read.latency_s,
            error=read.error,
        )
        return CallResult(completion, cost, cached=False, likelihood=read)
    total = None if called.cost is None or cost is None else called.cost + cost
    return CallResult(called.completion, total, called.cached, likelihood=read)


def read_row(completion: Completion) -> ResultValues:
    """The result columns of a ``likelihood`` run's row: no reply and no outcome, the reading's
    prompt count, cached prompt tokens (where the engine says) and latency, or its error."""
    return {
        "status": "error" if completion.error else "ok",
        "response": None,
        "outcome": None,
        "category": None,
        "usage_prompt_tokens": completion.prompt_tokens,
        "usage_completion_tokens": 0,
        "cached_tokens": completion.cached_tokens,
        "cached_source": None if completion.cached_tokens is None else completion.cached_source,
        "latency_s": completion.latency_s,
        "error": completion.error,
        "claim_report": None,
        "request_attempts": completion.attempts,
        "engine_mode": completion.engine_mode,
    }


def result_row(completion: Completion, result: Score) -> ResultValues:
    return {
        "status": "error" if result.outcome == "error" else "ok",
        "response": completion.text,
        "outcome": result.outcome,
        "category": result.category,
        "usage_prompt_tokens": completion.prompt_tokens,
        "usage_completion_tokens": completion.completion_tokens,
        "cached_tokens": completion.cached_tokens,
        "cached_source": None if completion.cached_tokens is None else completion.cached_source,
        "latency_s": completion.latency_s,
        "error": completion.error,
        "claim_report": None if result.claims is None else json.dumps(asdict(result.claims)),
        "request_attempts": completion.attempts,
        "engine_mode": completion.engine_mode,
    }


def row_id(item: WorkItem, label: str) -> str:
    """The row of one question: the call's id, with the question's label for multi-question prompts."""
    return f"{item.item_id}:{label}" if label else item.item_id


class _CtrlC(Exception):
    """Ctrl-C raised inside a worker."""


@dataclass
class Execution:
    """What one pass of a run (a start or a resume) does with its items; ``stopped_at_budget``
    when it left some."""

    caller: Caller
    store: RunStore
    judge: Judge | None = None
    reporter: Reporter | None = None
    stopped_at_budget: bool = False
    score: RunScore = "accuracy"
    """What each row keeps (``likelihood.run_score``)."""

    async def run(self, items: Sequence[WorkItem], workers: int) -> None:
        """Run ``items`` on ``workers`` tasks sharing one queue; Ctrl-C inside a call cancels the
        calls in flight (their items stay pending) and surfaces as ``KeyboardInterrupt``."""
        queue = iter(items)
        await self.run_lanes([(self.caller, queue)] * max(1, min(workers, len(items))))

    async def run_lanes(self, lanes: Sequence[tuple[Caller, Iterable[WorkItem]]]) -> None:
        """One task per lane, each calling its items through its own caller (an executor's replica
        of the engine); lanes given the same iterator share its queue. Stops as ``run`` says."""
        try:
            async with asyncio.TaskGroup() as group:
                for caller, queue in lanes:
                    group.create_task(self._guarded(caller, iter(queue)))
        except* _CtrlC:
            raise KeyboardInterrupt from None
        except* EngineCrashed as crashed:
            raise crashed.exceptions[0] from None
        except* BadInput as refused:
            # A provider refusing the run (bad key, unknown model) stops every worker; the calls in
            # flight stay pending. The CLI prints the first refusal in one line.
            raise refused.exceptions[0] from None
        except* (sqlite3.Error, OSError) as failed:
            # A write that failed (disk full, read-only): the first one, not a group, so the run
            # folder turns it into one line; every call recorded before it stays.
            raise failed.exceptions[0] from None

    async def _guarded(self, caller: Caller, queue: Iterator[WorkItem]) -> None:
        # A KeyboardInterrupt escaping a task leaves asyncio's task group in a bad state (Python
        # 3.11); carried as an ordinary exception, the group cancels the other workers cleanly.
        try:
            await self._work(caller, queue)
        except KeyboardInterrupt:
            raise _CtrlC from None

    async def _work(self, caller: Caller, queue: Iterator[WorkItem]) -> None:
        engine = caller.backend
        if engine.capabilities.batching and isinstance(engine, BatchingBackend):
            await self._work_batches(caller, engine, queue)
            return
        for item in queue:
            if caller.budget.stopped:
                self.stopped_at_budget = True
                return
            called = await self._call(caller, item)
            if called is None:
                self.stopped_at_budget = True
                return
            await self._record(item, called)
            # A backend that answers without suspending (the fakes, a cache hit) would otherwise
            # keep the loop from ever running asyncio's Ctrl-C handler until the queue is empty.
            await asyncio.sleep(0)

    async def _call(self, caller: Caller, item: WorkItem) -> CallResult | None:
        """The item's reply and, where the run keeps it, its answer's reading (``None``: the budget
        stopped it). A ``likelihood`` run sends no generation: its completion is the reading's
        prompt count and latency, with no text."""
        called: CallResult | None = None
        if self.score != "likelihood":
            called = await caller.call(item.request(), item.trial)
            if called is None or self.score == "accuracy" or called.completion.error is not None:
                return called
        return await self._read(caller, item, called)

    async def _read(self, caller: Caller, item: WorkItem, called: CallResult | None) -> CallResult | None:
        request = likelihood_request(item, caller.backend.tokenizer())
        if request is None:
            return called or CallResult(
                Completion(text="", prompt_tokens=len(item.prompt.token_ids)), 0.0, False
            )
        found = await caller.read(request)
        if found is None:
            return None
        return _with_reading(called, request, *found)

    async def _read_chunk(
        self,
        caller: Caller,
        engine: ReadsLikelihoodBatch,
        chunk: Sequence[WorkItem],
        results: list[CallResult | None],
    ) -> list[CallResult | None] | None:
        """The chunk's results with each item's reading, the chunk's readings sent together (an item
        whose call failed keeps its error; one with nothing to read its reply); ``None``: the budget
        stopped it."""
        tokenizer = caller.backend.tokenizer()
        wanted: list[tuple[int, LikelihoodRequest]] = []
        joined = list(results)
        for index, (item, called) in enumerate(zip(chunk, results, strict=True)):
            if called is not None and called.completion.error is not None:
                continue
            request = likelihood_request(item, tokenizer)
            if request is None:
                joined[index] = called or CallResult(
                    Completion(text="", prompt_tokens=len(item.prompt.token_ids)), 0.0, False
                )
            else:
                wanted.append((index, request))
        if wanted:
            found = await caller.read_batch(engine, [request for _, request in wanted])
            if not found:
                return None
            for (index, request), (read, cost) in zip(wanted, found, strict=True):
                joined[index] = _with_reading(results[index], request, read, cost)
        return joined

    async def _work_batches(self, caller: Caller, engine: BatchingBackend, queue: Iterator[WorkItem]) -> None:
        """Chunks of ``engine.batch_size`` consecutive items (prefix order, so a chunk's prompts
        share what they can in the engine's prefix cache), each recorded item by item; where the
        run keeps the likelihood, each item's reading follows its chunk: the chunk's readings sent
        together to an engine that reads them in batches (``ReadsLikelihoodBatch``), else one by one."""
        while chunk := list(itertools.islice(queue, max(1, engine.batch_size))):
            if caller.budget.stopped:
                self.stopped_at_budget = True
                return
            if self.score == "likelihood":
                results: list[CallResult | None] = [None] * len(chunk)
            else:
                results = list(await caller.call_batch(engine, [item.request() for item in chunk]))
                if not results:
                    self.stopped_at_budget = True
                    return
            batched = self.score != "accuracy" and isinstance(engine, ReadsLikelihoodBatch)
            if batched:
                assert isinstance(engine, ReadsLikelihoodBatch)
                read = await self._read_chunk(caller, engine, chunk, results)
                if read is None:
                    self.stopped_at_budget = True
                    return
                results = read
            for item, called in zip(chunk, results, strict=True):
                if (
                    not batched
                    and self.score != "accuracy"
                    and (called is None or called.completion.error is None)
                ):
                    called = await self._read(caller, item, called)
                    if called is None:
                        self.stopped_at_budget = True
                        return
                assert called is not None
                await self._record(item, called)
            await asyncio.sleep(0)

    async def _record(self, item: WorkItem, called: CallResult) -> None:
        completion = called.completion
        parts = item.case.scored_parts()
        read = called.likelihood
        scored = () if read is None else read.scored_from
        if read is not None and read.error is not None:
            # the reply may be fine, but the row's reading failed: an error row, read again on resume
            completion = replace(completion, error=f"likelihood: {read.error}")
        cost = called.cost
        rows: dict[str, ResultValues] = {}
        if self.score == "likelihood":  # no reply: the reading alone, or the error that stopped it
            for label, _ in parts:
                rows[row_id(item, label)] = {**read_row(completion), **likelihood_columns(read, scored)}
        else:
            scores = score_parts(item.case, completion, filler=item.prompt.filler_text())
            for (label, _), result in zip(parts, scores, strict=True):
                columns: ResultValues = {}
                if self.judge is not None and result.outcome != "error":
                    result, columns, judge_cost = await self.judge.review(item, label, completion, result)
                    cost = None if cost is None else cost + judge_cost
                rows[row_id(item, label)] = {**result_row(completion, result), **columns}
                if self.score == "both":
                    rows[row_id(item, label)].update(likelihood_columns(read, scored))
        for values in rows.values():
            # The call's cost is shared by its questions, so a sum over rows is the run's spend.
            values["cost"] = None if cost is None else cost / len(rows)
            values["cached_response"] = int(called.cached)
        self.store.record(rows)
        if self.reporter is not None:
            self.reporter.advance(item, completion)


def _caller(
    backend: Backend, model: str, config: ExperimentConfig, budget: Budget, limiters: Limiters
) -> tuple[Caller, int]:
    """A caller for ``backend`` and how many calls may run at once: remote APIs get their
    provider's limits and the response cache; local engines run one call at a time, uncached."""
    provider = backend.describe().get("backend", "")
    capabilities = backend.capabilities
    price = find_price(model, price_table(config), local=capabilities.local)
    check_budget_price(config, price, model)
    if capabilities.local:
        return Caller(backend, price=price, budget=budget), capabilities.max_concurrency or 1
    limiter = limiters.for_provider(provider)
    cache = ResponseCache.open(config.cache)
    return Caller(
        backend, price=price, budget=budget, limiter=limiter, cache=cache
    ), limiter.limits.concurrency


async def execute_items(
    config: ExperimentConfig,
    items: Sequence[WorkItem],
    backend: Backend,
    judge_backend: Backend | None,
    store: RunStore,
    reporter: Reporter | None,
    limiters: Limiters | None = None,
    budget: Budget | None = None,
) -> bool:
    """Run ``items``, recording each call as it finishes; True when the budget stopped it early.
    The budget and the limiters are made here unless given (a paired session shares one of each
    over its batches, so a provider's limits and one ``max_cost`` hold across both subjects), on
    the event loop that uses them."""
    budget = budget or Budget(config.max_cost, spent=store.spent())
    limiters = limiters or Limiters(config.limits)
    caller, workers = _caller(backend, config.model, config, budget, limiters)
    if caller.limiter is not None:
        caller.limiter.check(max((len(i.prompt.token_ids) + i.params.max_tokens for i in items), default=0))
    judge = make_judge(config, judge_backend, budget, limiters)
    execution = Execution(
        caller, store, judge=judge, reporter=reporter, score=run_score(config.score, backend)
    )
    try:
        await execution.run(items, workers)
    finally:
        for opened in (caller, judge.caller if judge else None):
            if opened is not None and opened.cache is not None:
                opened.cache.close()
    return execution.stopped_at_budget


def make_judge(
    config: ExperimentConfig, judge_backend: Backend | None, budget: Budget, limiters: Limiters
) -> Judge | None:
    """The run's judge, when its config names one, calling through the run's budget and limits."""
    if config.judge is None or judge_backend is None:
        return None
    return Judge(_caller(judge_backend, config.judge.model, config, budget, limiters)[0], config.judge)


def local_caller(backend: Backend, config: ExperimentConfig, budget: Budget) -> Caller:
    """A caller for one replica of a local engine (an executor's worker): no cache, no limits."""
    return _caller(backend, config.model, config, budget, Limiters(config.limits))[0]
