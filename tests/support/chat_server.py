"""A local OpenAI-compatible chat server for tests: answers with the fake lexical model and injects
scripted faults (429 with Retry-After, 500, timeouts, malformed JSON, dropped connections).

Each distinct prompt has its own script: its n-th request meets ``script[n]``, and requests past
the script are answered. Every request is logged (prompt key, time, fault) for the assertions.

Given a ``tokenize`` function (the model's tokenizer with its chat template), the server counts
prompts with it and keeps the ids of its last ``cache_slots`` prompts as a prefix cache, reporting
the longest prefix it shares with one of them as ``prompt_tokens_details.cached_tokens``: the
tokens a server with prefix caching would not evaluate again. With ``llama_log`` it answers as
llama-cpp-python's server does: no cached tokens in its usage, the prefix it kept written to that
file in that server's verbose log lines instead (``rotscope.backends.server_log``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rotscope._util.tokens import common_prefix
from rotscope.backends.fake import lexical_responder
from rotscope.tokenizers.remote import ApproximateTokenizer, render_plain
from rotscope.types import GenerateRequest, GenerationParams

OK = "ok"
TEMPLATE_OVERHEAD = 7
"""Tokens this server adds to each prompt (its 'chat template'), as a provider's usage would show."""


def prompt_key(messages: Sequence[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Logged:
    key: str
    at: float
    fault: str
    authorization: str | None


@dataclass
class ChatServer:
    """``script(key) -> faults``; ``hang_s`` is how long a ``timeout`` fault stalls, ``delay_s`` how
    long each answer takes; after ``refuse_after`` requests every request gets ``refusal``."""

    script: Callable[[str], Sequence[str]] = lambda key: ()
    hang_s: float = 2.0
    delay_s: float = 0.0
    retry_after: str = "1"
    refuse_after: int | None = None
    refusal: str = "401"
    report_prompt_tokens: Callable[[int], int] = lambda counted: counted
    """The prompt size the server reports, from its own count (a gateway that trims reports less)."""
    reply: Callable[[str, str | None], str] = lambda text, authorization: text
    """The answer's text from the fake model's text and the request's Authorization header (a
    test answers with odd code points, terminal escapes or an echoed key)."""
    error_detail: Callable[[str | None], str] = lambda authorization: f"scripted failure for {authorization}"
    """The message of a scripted 4xx/5xx from the request's Authorization header (real providers
    echo part of a wrong key; this one echoes all of it, always)."""
    tokenize: Callable[[Sequence[dict[str, str]]], list[int]] | None = None
    """The server's own count of a prompt's tokens (template included); ``None``: the approximate
    count plus ``TEMPLATE_OVERHEAD``, and no prefix cache."""
    cache_slots: int = 4
    llama_log: Path | None = None
    log: list[Logged] = field(default_factory=list)
    _cache: list[list[int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def requests_per_prompt(self) -> Counter[str]:
        return Counter(entry.key for entry in self.log)

    def answered_per_prompt(self) -> Counter[str]:
        return Counter(entry.key for entry in self.log if entry.fault == OK)

    def _next_fault(self, key: str, authorization: str | None) -> str:
        with self._lock:
            seen = sum(entry.key == key for entry in self.log)
            faults = self.script(key)
            fault = faults[seen] if seen < len(faults) else OK
            if self.refuse_after is not None and len(self.log) >= self.refuse_after:
                fault = self.refusal
            self.log.append(Logged(key, time.monotonic(), fault, authorization))
            return fault

    def count(self, messages: Sequence[dict[str, str]]) -> tuple[int, int]:
        """(prompt tokens reported, of them read from the prefix cache)."""
        if self.tokenize is None:
            counted = ApproximateTokenizer().count(render_plain(messages)) + TEMPLATE_OVERHEAD
            return self.report_prompt_tokens(counted), 0
        ids = self.tokenize(messages)
        with self._lock:
            cached = max((common_prefix(ids[:-1], before) for before in self._cache), default=0)
            self._cache = [*self._cache, ids][-self.cache_slots :]
        return self.report_prompt_tokens(len(ids)), cached

    def write_llama_log(self, prompt_tokens: int, cached: int) -> None:
        """The lines llama-cpp-python's server logs for one request (before it replies)."""
        assert self.llama_log is not None
        remaining = prompt_tokens - cached
        hit = f"Llama.generate: {cached} prefix-match hit, remaining {remaining} prompt tokens to eval"
        lines = [hit] if cached else []
        lines.append(f"llama_perf_context_print: prompt eval time =      12.50 ms / {remaining:5d} tokens")
        with self.llama_log.open("a", encoding="utf-8") as log:
            log.write("\n".join(lines) + "\n")

    def start(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                authorization = self.headers.get("Authorization")
                fault = server._next_fault(prompt_key(messages), authorization)
                if fault == "shutdown":  # the server goes away: later connections are refused
                    threading.Thread(target=server.stop).start()
                    self.close_connection = True
                    return
                if fault == "drop":
                    self.close_connection = True
                    return
                if fault == "timeout":
                    time.sleep(server.hang_s)
                    self.close_connection = True
                    return
                if fault == "malformed":
                    self._reply(200, b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "tru')
                    return
                if fault == "429":
                    error = b'{"error": {"message": "rate limited"}}'
                    self._reply(429, error, {"Retry-After": server.retry_after})
                    return
                if fault in ("500", "400", "404", "401"):
                    echoed = {"error": {"message": server.error_detail(authorization)}}
                    self._reply(int(fault), json.dumps(echoed).encode())
                    return
                request = GenerateRequest(
                    tuple(messages), (), GenerationParams(max_tokens=body.get("max_tokens", 32))
                )
                text = server.reply(lexical_responder()(request), authorization)
                time.sleep(server.delay_s)
                prompt_tokens, cached = server.count(messages)
                completion_tokens = len(text.split())
                usage: dict[str, Any] = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {"cached_tokens": cached},
                }
                if server.llama_log is not None:
                    del usage["prompt_tokens_details"]
                    server.write_llama_log(prompt_tokens, cached)
                answer = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
                self._reply(200, json.dumps(answer).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll: ``stop`` (``shutdown``) waits up to one poll for the loop to notice.
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
