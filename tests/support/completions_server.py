"""A tiny local token-id completions server for tests, in the shape of vLLM's, SGLang's or llama.cpp's
(``tests/fixtures/providers/{kind}_models.json`` and ``{kind}_completion.json``, recorded from those
servers): ``GET /v1/models`` answers the kind's model list, a completions request the kind's reply
with its counts filled in from the ids it was sent (the prompt's length, plus ``skew`` for a server
that tokenizes on its own; the longest prefix shared with the previous prompt as cached tokens).

Every request body is logged, and the most requests answered at once counted; ``die_after``
requests it stops answering (the socket closed, the request in flight dropped without a reply), as
a killed replica does.

A server can be made to fail (``fault``) once it has answered ``fault_after`` calls (completions and
readings together), on every ``fault_every``-th call from then on (1: every one; 2: intermittent):
``500`` (HTTP 500 with a JSON error), ``counts`` (a reply that counts 3 prompt tokens too many),
``garbage`` (HTTP 200 with a body that is not JSON), ``hang`` (no reply for ``hang_s`` seconds, past
the client's timeout) or ``refuse`` (it stops listening, as ``die_after``). A faulted call is logged
in ``faulted``, apart from the answered ``requests``.

A likelihood reading (vLLM: ``prompt_logprobs`` on ``/v1/completions``; SGLang: ``POST /generate``)
is logged in ``readings`` apart from the completions and answered in the kind's shape with each
prompt position's log-probability from ``position_logprobs`` (by default ``stub_logprob`` of the
position's own token: known, and different between tokens); llama.cpp's server refuses it as
llama-server refuses ``echo``."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from rotscope._util.tokens import common_prefix

FIXTURES = Path(__file__).parents[1] / "fixtures" / "providers"
Fault = Literal["500", "counts", "garbage", "hang", "refuse"]
FAULTS: tuple[Fault, ...] = ("500", "counts", "garbage", "hang", "refuse")
PATHS = {"vllm": "/v1/completions", "sglang": "/v1/completions", "llamacpp": "/completion"}


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def reply_for(kind: str, prompt: list[int], cached: int, skew: int, text: str) -> dict[str, Any]:
    """The kind's recorded reply with this prompt's counts."""
    body: dict[str, Any] = copy.deepcopy(fixture(f"{kind}_completion.json"))
    if kind == "llamacpp":
        body["content"] = text
        body["tokens_evaluated"] = len(prompt) + skew
        body["timings"]["cache_n"] = cached
        body["timings"]["prompt_n"] = len(prompt) + skew - cached
    else:
        body["choices"][0]["text"] = text
        body["usage"]["prompt_tokens"] = len(prompt) + skew
        body["usage"]["prompt_tokens_details"]["cached_tokens"] = cached
    return body


def stub_logprob(token: int) -> float:
    """The stub's log-probability of a prompt token after the tokens before it."""
    return -0.1 * (1 + token % 5)


def stub_position_logprobs(ids: list[int]) -> list[float | None]:
    return [None] + [stub_logprob(token) for token in ids[1:]]


def reading_for(kind: str, body: dict[str, Any], values: list[float | None], skew: int) -> dict[str, Any]:
    """The kind's reply to a likelihood reading of ``body``'s ids, each position's value given."""
    if kind == "sglang":
        ids = list(body["input_ids"])
        start = int(body.get("logprob_start_len", 0))
        return {
            "text": "",
            "meta_info": {
                "prompt_tokens": len(ids) + skew,
                "completion_tokens": 1,
                "input_token_logprobs": [[values[i], ids[i], None] for i in range(start, len(ids))],
                "output_token_logprobs": [[-0.5, 0, None]],
            },
        }
    ids = list(body["prompt"])
    reply: dict[str, Any] = copy.deepcopy(fixture("vllm_completion.json"))
    reply["choices"][0]["prompt_logprobs"] = [
        None if value is None else {str(token): {"logprob": value, "rank": 1, "decoded_token": ""}}
        for token, value in zip(ids, values, strict=True)
    ]
    reply["usage"]["prompt_tokens"] = len(ids) + skew
    return reply


@dataclass
class CompletionsServer:
    kind: str = "vllm"
    skew: int = 0
    text: str = "I do not know."
    die_after: int | None = None
    delay_s: float = 0.0
    """How long each answer takes (so calls in flight overlap, counted in ``max_in_flight``)."""
    port: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    readings: list[dict[str, Any]] = field(default_factory=list)
    position_logprobs: Callable[[list[int]], list[float | None]] = stub_position_logprobs
    models_calls: int = 0
    fault: Fault | None = None
    fault_after: int = 0
    fault_every: int = 1
    hang_s: float = 2.0
    calls: int = 0
    """Completions and readings asked of it, faulted or not."""
    faulted: list[dict[str, Any]] = field(default_factory=list)
    _release: threading.Event = field(default_factory=threading.Event)
    _previous: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _stopping: bool = False
    base_url: str = ""

    def prompts(self) -> list[list[int]]:
        return [list(body["prompt"]) for body in self.requests]

    def _fault_now(self, body: dict[str, Any]) -> Fault | None:
        """The fault this call meets, if any (under ``_lock``): counts the call."""
        self.calls += 1
        beyond = self.calls - self.fault_after
        if self.fault is None or beyond <= 0 or (beyond - 1) % max(1, self.fault_every):
            return None
        self.faulted.append(body)
        return self.fault

    def start(self) -> CompletionsServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return None

            def _faulty(self, fault: Fault) -> None:
                """Answer as the fault says (``counts`` is answered by the caller, skewed)."""
                if fault == "500":
                    self._send(500, {"object": "error", "message": "Internal Server Error"})
                elif fault == "garbage":
                    data = b"<html><body>502 upstream garbage\x00\xff</body>"
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif fault == "hang":
                    server._release.wait(server.hang_s)
                    self.close_connection = True
                elif fault == "refuse":
                    server.stop_soon()
                    self.close_connection = True

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if server.dead:
                    self.close_connection = True
                    return
                server.models_calls += 1
                if self.path == "/v1/models":
                    self._send(200, fixture(f"{server.kind}_models.json"))
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path == "/generate" or "prompt_logprobs" in body:
                    self._read(body)
                    return
                with server._lock:
                    if server.dead:
                        self.close_connection = True
                        return
                    fault = server._fault_now(body)
                if fault is not None and fault != "counts":
                    self._faulty(fault)
                    return
                skew = server.skew + (3 if fault == "counts" else 0)
                with server._lock:
                    server.requests.append(body)
                    if server.die_after is not None and len(server.requests) > server.die_after:
                        server.requests.pop()
                        server.stop_soon()
                        self.close_connection = True
                        return  # the call in flight gets no reply
                    prompt = list(body["prompt"])
                    cached = common_prefix(server._previous, prompt[:-1])
                    server._previous = prompt
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(server.delay_s)
                with server._lock:
                    server.in_flight -= 1
                if self.path != PATHS[server.kind]:
                    self._send(404, {"error": f"no route {self.path}"})
                    return
                self._send(200, reply_for(server.kind, prompt, cached, skew, server.text))

            def _read(self, body: dict[str, Any]) -> None:
                with server._lock:
                    if server.dead:
                        self.close_connection = True
                        return
                    fault = server._fault_now(body)
                    if fault is None or fault == "counts":
                        server.readings.append(body)
                if fault is not None and fault != "counts":
                    self._faulty(fault)
                    return
                skew = server.skew + (3 if fault == "counts" else 0)
                wanted = "/generate" if server.kind == "sglang" else "/v1/completions"
                if server.kind == "llamacpp" or self.path != wanted:
                    self._send(
                        404 if server.kind != "llamacpp" else 400, {"error": "Only no echo is supported"}
                    )
                    return
                ids = list(body.get("input_ids") or body["prompt"])
                values = server.position_logprobs(ids)
                self._send(200, reading_for(server.kind, body, values, skew))

        self._server = _QuietServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        # A short poll: ``stop`` (``shutdown``) waits up to one poll for the loop to notice.
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    @property
    def dead(self) -> bool:
        return self._stopping

    def stop_soon(self) -> None:
        """Stop listening (from a request's own thread): later connections are refused."""
        self._stopping = True
        server = self._server
        if server is not None:
            threading.Thread(target=lambda: (server.shutdown(), server.server_close()), daemon=True).start()

    def stop(self) -> None:
        self._release.set()  # a hanging answer ends now
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up on a hanging answer leaves a broken socket: nothing is printed (a
    traceback on stderr would land in the output of the command under test)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None
