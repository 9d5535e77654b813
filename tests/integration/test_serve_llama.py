"""``rotscope serve-llama``, the supported way to start llama-cpp-python's own server: on the bundled
model it answers a chat completion. On a CPU with AMX the plain ``python -m llama_cpp.server``
crashes on that first request (SIGSEGV in llama.cpp's AMX matrix multiply), so there the 200 proves
the extra buffers were turned off; elsewhere it proves the command starts the server as documented."""

from __future__ import annotations

from pathlib import Path

import httpx

from rotscope.backends.llamacpp.extra_buffers import cpu_has_amx
from tests.llama_server import SERVED_NAME, served


def test_serve_llama_answers_a_chat_completion(bundled_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with served(bundled_path, log) as base_url:
        reply = httpx.post(
            f"{base_url}/chat/completions",
            json={
                "model": SERVED_NAME,
                "messages": [{"role": "user", "content": "The gate opens at dusk. When does the gate open?"}],
                "max_tokens": 6,
                "temperature": 0.0,
            },
            timeout=120,
        )
    assert reply.status_code == 200, log.read_text(errors="replace")[-2000:]
    body = reply.json()
    assert body["usage"]["prompt_tokens"] > 10
    assert body["choices"][0]["message"]["content"]
    decision = next(line for line in log.read_text(errors="replace").splitlines() if "extra buffers" in line)
    assert decision.startswith("rotscope: llama.cpp extra buffers ")
    # "no AMX on this CPU" holds the phrase "AMX on this CPU": read the reason, not a substring of it
    reason = decision.partition("(")[2].partition(")")[0]
    assert reason.startswith("AMX on this CPU") == cpu_has_amx(), decision
    assert reason.startswith("no AMX on this CPU") == (not cpu_has_amx()), decision
