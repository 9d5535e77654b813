"""llama.cpp's own ``llama-server`` replicas on the bundled GGUF for tests and benchmarks
(``rotscope.backends.llamacpp.server_build``): the cached build for this CPU, built first where a
compiler exists and none is cached; a test skips, saying why, only where neither exists."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from rotscope.backends.llamacpp.server_build import build, cached_server, compilers, server_command

SERVED_NAME = "smollm2"
BATCH = 256
"""The in-process engine's default batch, so both split prompts into the same batches."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_binary() -> Path:
    """The cached ``llama-server``, built now if a compiler is here; skips, printing why, if not."""
    binary = cached_server()
    if binary is not None:
        return binary
    missing = compilers()
    if missing:
        reason = f"no cached llama-server build and no compiler to build one ({', '.join(missing)} missing)"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    return build()


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def llama_servers(
    model: Path, count: int, logs: Path, *, threads: int = 1, n_ctx: int = 512
) -> Iterator[list[Served]]:
    """``count`` replicas of ``model`` on 127.0.0.1, one slot each, ``threads`` threads, the extra
    weight buffers off (``--no-repack``, as the in-process engine's ``extra_buffers: off``), each
    answering ``GET /v1/models`` before this yields."""
    binary = server_binary()
    started: list[Served] = []
    try:
        for number in range(count):
            port = free_port()
            log = logs / f"llama-server-{number}.log"
            command = server_command(
                binary,
                model,
                port=port,
                threads=threads,
                n_batch=BATCH,
                n_ctx=n_ctx,
                alias=SERVED_NAME,
                amx=True,
            )
            process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
            started.append(Served(f"http://127.0.0.1:{port}", process, log))
        deadline = time.monotonic() + 120
        for served in started:
            while True:
                assert served.process.poll() is None, served.log.read_text(errors="replace")[-2000:]
                try:
                    if httpx.get(f"{served.url}/v1/models", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "llama-server not ready within 120 s"
                time.sleep(0.2)
        yield started
    finally:
        for served in started:
            if served.process.poll() is None:
                served.process.terminate()
                try:
                    served.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    served.kill()
