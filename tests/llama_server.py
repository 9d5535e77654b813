"""llama-cpp-python's own server started the way users are told to (``rotscope serve-llama MODEL
[server options]``, ``rotscope.backends.llamacpp.server``): the server takes no option for
llama.cpp's extra buffers, and on CPUs with AMX they crash its first prompt, so the command decides
them from this machine's CPU flags and probe.

``served`` starts it on the bundled model for a test or a benchmark and reads its prefix-hit log
(the server reports no cached tokens in its usage, but says per request how much of the prompt it
kept from the previous one)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from rotscope._util.cpus import usable_cpus

ROTSCOPE = Path(sys.executable).with_name("rotscope")
SERVED_NAME = "smollm2"
BATCH = 256  # the in-process fallback, so both engines split prompts into the same batches
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(
    model: Path, log_path: Path, n_ctx: int = 512, threads: int | None = None, state_cache_mb: int = 0
) -> Iterator[str]:
    """The server on 127.0.0.1 with ``model``, extra buffers as ``rotscope serve-llama`` decides, its
    log in ``log_path``, ``threads`` threads (by default one per CPU this process may use: an xdist
    worker pinned to one CPU gets one busy-waiting thread, not one per CPU of the machine), and
    with ``state_cache_mb`` its ``--cache`` RAM state cache of that size (a saved state is restored
    when it shares more of the prompt than the live KV cache; the log's prefix hits then count from
    the restored state); yields its base URL."""
    port = free_port()
    threads_arg = str(threads or len(usable_cpus()))
    log = log_path.open("w")
    process = subprocess.Popen(
        [str(ROTSCOPE), "serve-llama", str(model),
         "--model_alias", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
         "--n_batch", str(BATCH), "--n_ubatch", str(BATCH), "--n_threads", threads_arg,
         "--n_threads_batch", threads_arg,
         *(["--cache", "True", "--cache_size", str(state_cache_mb << 20)] if state_cache_mb else [])],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, "llama_cpp.server exited during start-up"
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "llama_cpp.server not ready within 120 s"
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def prefix_hits(log_text: str) -> list[int]:
    """The prompt tokens the server kept from the previous prompt, one entry per request that kept
    any (a request that kept none logs no hit and evaluates its whole prompt)."""
    return [int(match.group(1)) for match in PREFIX_HIT.finditer(log_text)]
