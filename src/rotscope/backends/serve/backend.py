"""Exact token ids to servers the user already runs: ``serve/NAME --base-url URL[,URL...]``.

vLLM's and SGLang's ``POST /v1/completions`` take ``prompt`` as a list of token ids; llama.cpp's
``llama-server`` takes them as ``prompt`` on ``POST /completion`` (with ``cache_prompt``). rotscope
renders and verifies each prompt with the model's own tokenizer (``serve.tokenizer``: a GGUF or a
``tokenizer.json``, and its chat template or ``serve.template``) and sends the ids, so the engine
sees the verified prompt; the prompt-token count the server reports must equal the ids sent, else
the row is an error naming both counts (never scored). Cached prompt tokens are stored per row
(vLLM/SGLang: ``usage.prompt_tokens_details.cached_tokens``; llama.cpp: ``timings.cache_n``).

Several URLs are replicas of one model: the run's executor (``execution.executors.replicas``) deals
whole prefix groups to them, so each replica's prefix cache warms once per group. The pool keeps
each replica's health (``health``): a call that fails for a fault of the replica (no answer, a
timeout, HTTP 5xx or 429, a body that is not a reply, a wrong prompt-token count) is sent again to
another replica in the pool at once, so it is an error row only where no replica answers it; a
replica that fails ``serve.unhealthy_after`` calls in a row (or stops answering even ``GET
/v1/models``) is taken out of the pool, and the executor moves the calls it had left to the others.
A replica taken out is probed again by ``GET /v1/models`` after ``serve.probe_after_s`` (doubled
each time). A refusal of the request itself (HTTP 400, 413, 422: an over-long prompt) is the row's
error, neither moved nor counted against the replica. Readiness is ``GET /v1/models`` only: no
request but a work item's reaches the completions endpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import httpx

from rotscope._util.checks import Check
from rotscope._util.urls import urls_problem
from rotscope.backends import register_backend
from rotscope.backends.remote_options import RemoteOptions
from rotscope.backends.retry import Permanent, RetryPolicy, Transient, call_with_retries, is_retry_status
from rotscope.backends.serve.health import Health
from rotscope.backends.serve.likelihood import (
    NO_LIKELIHOOD,
    ReadingRefused,
    likelihood_body,
    parse_likelihood,
    reads_likelihood,
)
from rotscope.backends.serve.options import ServeOptions, ServerKind
from rotscope.backends.template import TemplatedTokenizer, read_template
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BackendRefused, BadInput
from rotscope.run_meta import ReplicaHealth
from rotscope.tokenizers.remote import HFTokenizer, load_tokenizer
from rotscope.types import (
    Backend,
    BackendDescription,
    Capabilities,
    Completion,
    GenerateRequest,
    Likelihood,
    LikelihoodRequest,
    Tokenizer,
)

PROVIDER = "serve"
UNKNOWN_WINDOW = 10_000_000
"""A tokenizer.json declares no window: an over-long prompt comes back as an error row."""
_PROBE_TIMEOUT_S = 5.0
READY_WAIT_S = 120.0
"""How long a replica may answer 503 (loading its model) before it counts as down."""
_DETAIL_CHARS = 300
OWNERS: Mapping[str, ServerKind] = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp"}
"""``owned_by`` of a server's ``GET /v1/models`` entries, by the software that answers so."""
ASSUMED_KIND: ServerKind = "vllm"
"""The request shape sent to a replica whose kind is not known (it never answered its check)."""
REQUEST_REFUSED = frozenset({400, 413, 422})
"""HTTP statuses that refuse the request itself (an over-long prompt): the row's error, sent to no
other replica and not counted against this one."""
T = TypeVar("T")


def server_root(url: str) -> str:
    """A base URL without a trailing ``/`` or ``/v1``: the paths are added per server kind."""
    root = url.strip().rstrip("/")
    return root.removesuffix("/v1")


def base_urls(options: ServeOptions, remote: RemoteOptions) -> list[str]:
    """The replicas' roots: ``serve.base_url``, else ``remote.base_url`` (``--base-url``), comma
    separated; bad input when neither names a server or one is named twice."""
    given = options.base_url or remote.base_url
    if not given:
        raise BadInput(
            "serve.base_url: serve/NAME needs --base-url URL[,URL...] (the servers to send ids to)"
        )
    problem = urls_problem(given)
    if problem is not None:
        raise BadInput(f"serve.base_url: {problem}")
    roots = [server_root(part) for part in given.split(",") if part.strip()]
    if not roots:
        raise BadInput(f"serve.base_url: {given!r} names no server; give --base-url URL[,URL...]")
    if len(set(roots)) != len(roots):
        raise BadInput(f"serve.base_url: a server is named twice in {given!r}")
    return roots


def detect_kind(models: object) -> ServerKind | None:
    """The server software a ``GET /v1/models`` body names in its entries' ``owned_by`` (vLLM:
    ``vllm``, SGLang: ``sglang``, llama-server: ``llamacpp``); ``None`` when it names none."""
    data = models.get("data") if isinstance(models, dict) else None
    for entry in data if isinstance(data, list) else []:
        owner = entry.get("owned_by") if isinstance(entry, dict) else None
        if isinstance(owner, str) and owner.lower() in OWNERS:
            return OWNERS[owner.lower()]
    return None


def request_body(
    kind: ServerKind, name: str, request: GenerateRequest, params: Mapping[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The completions path and JSON body that send ``request``'s ids to a ``kind`` server, with
    greedy seeded decoding as the in-process engines use."""
    ids = list(request.token_ids)
    decoding = request.params
    if kind == "llamacpp":
        body: dict[str, Any] = {
            "prompt": ids,
            "n_predict": decoding.max_tokens,
            "temperature": decoding.temperature,
            "seed": decoding.seed,
            "cache_prompt": True,
        }
        path = "/completion"
    else:
        body = {
            "model": name,
            "prompt": ids,
            "max_tokens": decoding.max_tokens,
            "temperature": decoding.temperature,
            "seed": decoding.seed,
        }
        path = "/v1/completions"
    if request.stop is not None and request.stop.strings:
        body["stop"] = list(request.stop.strings)  # the answer kind's, as the server's own ``stop``
    body.update(params)
    return path, body


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_reply(kind: ServerKind, content: bytes, sent: int) -> Completion:
    """Text, counts and cached tokens of a completions reply. The prompt count the server reports
    must be the ``sent`` ids (else an error row naming both); a body that is not a reply at all is
    ``Transient``, since another attempt usually gets a whole one."""
    try:
        data = json.loads(content)
        if kind == "llamacpp":
            text = str(data["content"])
            timings = data.get("timings") or {}
            cached = _integer(timings.get("cache_n"))
            reported = _integer(data.get("tokens_evaluated"))
            if reported is None and _integer(timings.get("prompt_n")) is not None:
                reported = int(timings["prompt_n"]) + (cached or 0)
            generated = _integer(data.get("tokens_predicted")) or 0
        else:
            text = str(data["choices"][0].get("text") or "")
            usage = data.get("usage") or {}
            details = usage.get("prompt_tokens_details") or {}
            cached = _integer(details.get("cached_tokens"))
            reported = _integer(usage.get("prompt_tokens"))
            generated = _integer(usage.get("completion_tokens")) or 0
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise Transient(f"malformed response ({len(content)} bytes)") from None
    if reported != sent:
        said = "no prompt-token count" if reported is None else f"{reported} prompt tokens"
        return Completion(
            text="",
            error=(
                f"the server reports {said}, {sent} token ids were sent (it tokenized or cut the "
                "prompt itself): not the verified prompt"
            ),
        )
    return Completion(text=text, prompt_tokens=sent, completion_tokens=generated, cached_tokens=cached)


class ReplicaLost(Exception):
    """No answer from a replica (refused, reset, timed out): not retried, the replica is probed."""


class ReplicaLoading(ReplicaLost):
    """The replica answers 503 to ``GET /v1/models``: it is still loading its model."""


class RequestRefused(Permanent):
    """The replica refused the request itself (``REQUEST_REFUSED``): not the replica's fault."""


@dataclass
class Replica:
    """One server of the pool, its software, why it is out of the pool (``None``: in it), and its
    health."""

    url: str
    kind: ServerKind | None = None
    down: str | None = None
    checked: bool = False
    health: Health = field(default_factory=lambda: Health(probe_after_s=30.0))
    busy: int = 0
    """Its calls in flight."""


class ServeBackend:
    """A pool of servers of one model, sent the verified token ids. ``generate_on`` calls one
    replica; ``generate`` the first that is up (the cache controls, Inspect)."""

    def __init__(
        self,
        name: str,
        options: ServeOptions,
        urls: Sequence[str],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not name:
            raise BadInput("model: serve/ needs the served model's name, e.g. serve/NAME")
        if options.tokenizer is None:
            raise BadInput(
                "serve.tokenizer: serve/NAME needs the model's own tokenizer (a GGUF or a tokenizer.json)"
            )
        self.name = name
        self.options = options
        self.model_id = f"{PROVIDER}/{name}"
        inner: Tokenizer = load_tokenizer(options.tokenizer, "serve.tokenizer")
        if options.template is not None:
            inner = TemplatedTokenizer(inner, read_template(options.template))
        elif isinstance(inner, HFTokenizer) and not inner.template:
            raise BadInput(
                f"serve.tokenizer: {options.tokenizer} comes with no chat template; set serve.template"
            )
        self._tokenizer = inner
        self.context_window = (
            options.context_window
            or int(
                getattr(inner, "context_window", 0)
                or getattr(getattr(inner, "inner", None), "context_window", 0)
            )
            or UNKNOWN_WINDOW
        )
        self.replicas = [
            Replica(url, options.kind, health=Health(probe_after_s=options.probe_after_s)) for url in urls
        ]
        self.concurrency = options.concurrency
        self.capabilities = Capabilities(
            local=True,
            exact_ids=True,
            max_concurrency=len(self.replicas) * options.concurrency,
            likelihood=reads_likelihood(options.kind),
        )
        self.likelihood_refusal: str | None = (
            None if options.kind is None else NO_LIKELIHOOD.get(options.kind)
        )
        """Why the pool reads no likelihoods (``None``: it does, or its kind is not known yet)."""
        self._policy = RetryPolicy(options.max_attempts, 0.5, 10.0)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._slots: list[asyncio.Semaphore] = []
        self._since: float | None = None

    def _http(self) -> httpx.AsyncClient:
        """One connection pool per event loop (a run is one loop; tests may start several), and
        each replica's ``serve.concurrency`` slots on it."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(transport=self._transport, timeout=self.options.timeout_s)
            self._client_loop = loop
            self._slots = [asyncio.Semaphore(self.concurrency) for _ in self.replicas]
        return self._client

    def _now(self) -> float:
        now = asyncio.get_running_loop().time()
        if self._since is None:
            self._since = now
        return now

    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        return None

    def replica_urls(self) -> list[str]:
        return [replica.url for replica in self.replicas]

    def replica_kinds(self) -> list[str | None]:
        """Each replica's server software, as set or detected (``None`` before it answered)."""
        return [replica.kind for replica in self.replicas]

    def down_reason(self, number: int) -> str | None:
        """Why replica ``number`` is out of the pool, ``None`` while it is in it."""
        return self.replicas[number].down

    def replica_health(self) -> list[ReplicaHealth]:
        """Each replica's calls, failed calls and the times it was taken out, in this session."""
        return [replica.health.record_of(replica.url) for replica in self.replicas]

    def _take_out(self, replica: Replica, reason: str) -> None:
        replica.down = reason
        replica.health.take_out(reason, self._now(), self._since or 0.0)

    def _recorded(self, replica: Replica, fault: str | None) -> None:
        """One call's outcome on ``replica``; past ``serve.unhealthy_after`` failures in a row it is
        taken out, unless it is the last replica in the pool (its calls then have nowhere to go)."""
        health = replica.health
        health.record(fault)
        if fault is None or replica.down is not None or health.in_a_row < self.options.unhealthy_after:
            return
        if any(other.down is None for other in self.replicas if other is not replica):
            self._take_out(replica, f"{health.in_a_row} failed calls in a row, the last: {fault}")

    async def _models(self, replica: Replica) -> object:
        """The replica's ``GET /v1/models`` body; ``ReplicaLost`` when it does not answer with one."""
        try:
            response = await self._http().get(f"{replica.url}/v1/models", timeout=_PROBE_TIMEOUT_S)
        except httpx.TransportError as error:
            raise ReplicaLost(f"GET /v1/models: {type(error).__name__}") from None
        if response.status_code == 503:  # llama-server while it loads the model
            raise ReplicaLoading("GET /v1/models: HTTP 503 (loading)")
        if response.status_code != 200:
            raise ReplicaLost(f"GET /v1/models: HTTP {response.status_code}")
        try:
            return cast(object, response.json())
        except ValueError:
            raise ReplicaLost("GET /v1/models: not JSON") from None

    async def _ready(self, replica: Replica) -> object:
        """``GET /v1/models`` once the replica has loaded its model (``READY_WAIT_S`` at most)."""
        deadline = asyncio.get_running_loop().time() + READY_WAIT_S
        while True:
            try:
                return await self._models(replica)
            except ReplicaLoading:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.25)

    async def connect(self) -> list[int]:
        """The replicas that are up, each checked once by ``GET /v1/models`` (its kind detected
        there when ``serve.kind`` is unset); ``BackendRefused`` when none is. A replica taken out of the
        pool is probed again once its wait is over, every one of them at once when none is left."""
        self._http()
        now = self._now()
        left = [replica for replica in self.replicas if replica.checked and replica.down is None]
        for replica in self.replicas:
            if replica.checked and replica.down is not None and (not left or replica.health.due(now)):
                await self._probe(replica)
        for replica in self.replicas:
            if replica.checked or replica.down is not None:
                continue
            try:
                models = await self._ready(replica)
            except ReplicaLost as lost:
                replica.checked = True
                self._take_out(replica, str(lost))
                continue
            replica.checked = True
            replica.health.probe_at = None
            if replica.kind is None:
                replica.kind = detect_kind(models)
                if replica.kind is None:
                    raise BadInput(
                        f"serve.kind: cannot tell which server answers at {replica.url} (its /v1/models "
                        "names no vllm, sglang or llamacpp owner); set serve.kind"
                    )
        live = [number for number, replica in enumerate(self.replicas) if replica.down is None]
        self._decide_likelihood()
        if not live:
            downs = "; ".join(f"{replica.url}: {replica.down}" for replica in self.replicas)
            raise BackendRefused(f"serve.base_url: no server answers ({downs}); is it running?")
        return live

    async def _probe(self, replica: Replica) -> None:
        """Put a replica taken out back into the pool when it answers ``GET /v1/models``; else its
        wait doubles."""
        try:
            models = await self._models(replica)
        except ReplicaLost as lost:
            self._take_out(replica, f"probe: {lost}")
            return
        if replica.kind is None:
            replica.kind = detect_kind(models)
            if replica.kind is None:
                self._take_out(replica, "probe: its /v1/models names no vllm, sglang or llamacpp owner")
                return
        replica.down = None
        replica.health.put_back()

    def _decide_likelihood(self) -> None:
        """Once a replica's kind is known: no likelihood where any replica cannot read one."""
        for replica in self.replicas:
            if replica.kind is not None and replica.kind in NO_LIKELIHOOD and self.capabilities.likelihood:
                self.capabilities = replace(self.capabilities, likelihood=False)
                self.likelihood_refusal = f"{NO_LIKELIHOOD[replica.kind]} (at {replica.url})"

    async def _post(self, replica: Replica, path: str, body: Mapping[str, Any]) -> bytes:
        """One attempt's reply body; ``ReplicaLost`` without an answer, ``Transient`` or
        ``Permanent`` for an HTTP error."""
        try:
            response = await self._http().post(f"{replica.url}{path}", json=body)
        except httpx.TransportError as error:
            raise ReplicaLost(f"{path}: {type(error).__name__}") from None
        if response.status_code >= 400:
            detail = " ".join(response.text.split())[:_DETAIL_CHARS]
            failure = f"HTTP {response.status_code} from {replica.url}{path}: {detail}"
            if is_retry_status(response.status_code):
                raise Transient(failure)
            raise RequestRefused(failure) if response.status_code in REQUEST_REFUSED else Permanent(failure)
        return response.content

    async def _failover(
        self,
        number: int,
        once: Callable[[Replica], Awaitable[tuple[T, str | None]]],
        refused: Callable[[Replica], T],
    ) -> T:
        """``once`` on replica ``number``, and again on another replica in the pool (the least busy)
        for as long as it fails for a fault of the replica (``once``'s second value) and one is left
        to try; each call counted in its replica's health. ``refused``: the result where the
        replica is out of the pool and no other is in it."""
        self._http()
        tried: set[int] = set()
        current: int | None = number
        result: T | None = None
        while current is not None:
            replica = self.replicas[current]
            tried.add(current)
            if replica.down is None:
                async with self._slots[current]:
                    replica.busy += 1
                    try:
                        result, fault = await once(replica)
                    finally:
                        replica.busy -= 1
                self._recorded(replica, fault)
                if fault is None:
                    return result
            elif result is None:
                result = refused(replica)
            standby = [n for n, r in enumerate(self.replicas) if n not in tried and r.down is None]
            current = min(standby, key=lambda n: self.replicas[n].busy) if standby else None
        assert result is not None
        return result

    async def _lost(self, replica: Replica, lost: ReplicaLost) -> str:
        """A call that got no answer: the replica asked ``GET /v1/models``, taken out when it does
        not answer that either; the fault in words."""
        try:
            await self._models(replica)
        except ReplicaLost as probe:
            if replica.down is None:
                self._take_out(replica, f"{lost}, then {probe}")
        return f"no answer ({lost})"

    async def likelihood_on(self, number: int, request: LikelihoodRequest) -> Likelihood:
        """Each answer form's token log-probabilities after the prompt, read by replica ``number``
        (one request per form, ``serve.likelihood``), or by another in the pool where it fails as
        ``generate_on`` says. Never raises for a fault of the server: an error reading."""
        started = asyncio.get_running_loop().time()

        def failed(message: str) -> Likelihood:
            return Likelihood(latency_s=asyncio.get_running_loop().time() - started, error=message)

        async def once(replica: Replica) -> tuple[Likelihood, str | None]:
            return await self._read_once(replica, request, failed)

        return await self._failover(
            number, once, lambda replica: failed(f"replica {replica.url} is down ({replica.down})")
        )

    async def _read_once(
        self, replica: Replica, request: LikelihoodRequest, failed: Callable[[str], Likelihood]
    ) -> tuple[Likelihood, str | None]:
        """The reading on one replica, and the replica's fault where it failed for one."""
        kind: ServerKind = replica.kind or ASSUMED_KIND
        if kind in NO_LIKELIHOOD:
            return failed(NO_LIKELIHOOD[kind]), None
        forms: list[tuple[float, ...]] = []
        started = asyncio.get_running_loop().time()
        for form in request.continuations:
            path, body = likelihood_body(kind, self.name, request.token_ids, form)

            async def attempt(
                path: str = path, body: dict[str, Any] = body, form: tuple[int, ...] = form
            ) -> tuple[float, ...]:
                content = await self._post(replica, path, body)
                return parse_likelihood(kind, content, len(request.token_ids), form)

            try:
                forms.append(await call_with_retries(attempt, self._policy))
            except ReplicaLost as lost:
                fault = await self._lost(replica, lost)
                return failed(f"replica {replica.url}: {fault}"), fault
            except (RequestRefused, ReadingRefused) as refused:
                return failed(str(refused)), None
            except (Transient, Permanent) as failure:
                return failed(str(failure)), str(failure)
            except Exception as error:  # a bug in parsing must not stop the run: an error row
                return failed(f"{type(error).__name__}: {error}"), f"{type(error).__name__}"
        read = Likelihood(
            token_logprobs=tuple(forms),
            prompt_tokens=len(request.token_ids),
            latency_s=asyncio.get_running_loop().time() - started,
        )
        return read, None

    async def likelihood(self, request: LikelihoodRequest) -> Likelihood:
        live = await self.connect()
        return await self.likelihood_on(live[0], request)

    async def generate_on(self, number: int, request: GenerateRequest) -> Completion:
        """``request`` sent to replica ``number``. Never raises for a fault of the server: an HTTP
        error or a malformed reply is retried there up to ``serve.max_attempts`` attempts, and a
        call that still fails for a fault of the replica is sent to another replica in the pool
        (``_failover``); it is an error row where none answers it, retried on ``--resume``. A
        replica that stops answering is marked down (probed by ``GET /v1/models``)."""

        def refused(replica: Replica) -> Completion:
            return Completion(text="", error=f"replica {replica.url} is down ({replica.down})")

        async def once(replica: Replica) -> tuple[Completion, str | None]:
            return await self._generate_once(replica, request)

        return await self._failover(number, once, refused)

    async def _generate_once(
        self, replica: Replica, request: GenerateRequest
    ) -> tuple[Completion, str | None]:
        """The call on one replica, and the replica's fault where it failed for one."""
        kind: ServerKind = replica.kind or ASSUMED_KIND
        path, body = request_body(kind, self.name, request, self.options.params)
        attempts = 0
        started = asyncio.get_running_loop().time()

        async def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            return parse_reply(kind, await self._post(replica, path, body), len(request.token_ids))

        def failed(message: str) -> Completion:
            elapsed = asyncio.get_running_loop().time() - started
            return Completion(text="", error=message, attempts=attempts, latency_s=elapsed)

        try:
            completion = await call_with_retries(attempt, self._policy)
        except ReplicaLost as lost:
            fault = await self._lost(replica, lost)
            return failed(f"replica {replica.url}: {fault}"), fault
        except RequestRefused as refusal:
            return failed(str(refusal)), None
        except (Transient, Permanent) as failure:
            return failed(str(failure)), str(failure)
        except Exception as error:  # a bug in parsing must not stop the run: an error row
            return failed(f"{type(error).__name__}: {error}"), type(error).__name__
        elapsed = asyncio.get_running_loop().time() - started
        if completion.error is None:
            answered = Completion(
                text=completion.text,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                cached_tokens=completion.cached_tokens,
                latency_s=elapsed,
                attempts=attempts,
            )
            return answered, None
        return failed(str(completion.error)), str(completion.error)

    async def generate(self, request: GenerateRequest) -> Completion:
        live = await self.connect()
        return await self.generate_on(live[0], request)

    def describe(self) -> BackendDescription:
        template = getattr(self._tokenizer, "template", "")
        return {
            "backend": PROVIDER,
            "model": self.model_id,
            "kind": self.options.kind,
            "tokenizer": self._tokenizer.name,
            "tokenizer_digest": self._tokenizer.digest(),
            "template_digest": hashlib.sha256(str(template).encode()).hexdigest()[:16],
            "token_count": "exact",
            "options": self.options.model_dump(
                mode="json", exclude={"base_url", "concurrency", "timeout_s", "max_attempts"}
            ),
        }

    def close(self) -> None:
        # The pool belongs to the run's event loop, which has ended; dropping it closes the sockets.
        self._client = None
        self._client_loop = None


def _machine_checks(in_worker: Callable[[Backend], Any]) -> list[Check]:
    """``rotscope doctor``'s line for the llama-server build ``serve/NAME`` can be tested on."""
    from rotscope.backends.llamacpp.server_build import doctor_check

    return [doctor_check()]


@register_backend(
    PROVIDER,
    likelihood="reads answer likelihoods on vLLM (prompt_logprobs) and SGLang (/generate) servers; "
    "llama.cpp's llama-server cannot (log-probabilities of generated tokens only)",
    checks=_machine_checks,
    hint="serve/NAME --base-url URL[,URL...]: token ids to vLLM, SGLang or llama.cpp servers "
    "(serve.tokenizer: the model's GGUF or tokenizer.json); several URLs are replicas",
)
def serve_backend(name: str, config: ExperimentConfig) -> ServeBackend:
    options = config.section(ServeOptions)
    return ServeBackend(name, options, base_urls(options, config.section(RemoteOptions)))


__all__ = [
    "Replica",
    "ReplicaLost",
    "ServeBackend",
    "base_urls",
    "detect_kind",
    "parse_reply",
    "request_body",
    "server_root",
]
