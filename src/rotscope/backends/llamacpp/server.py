"""llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``) started with
llama.cpp's extra buffers decided for this machine: ``rotscope serve-llama MODEL [server options]``.

The server takes no option for the extra buffers, and on Intel CPUs with AMX its first multi-token
prompt crashes (SIGSEGV, llama.cpp issue 20824; see ``extra_buffers``). So on a CPU whose flags
report AMX the probe's verdict for the model file decides (once per machine and model, remembered),
elsewhere llama.cpp's default (on) is kept without a probe; then the server runs in this process
(``runpy``) with the user's arguments, the model's default parameters wrapped as the verdict said.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rotscope.backends.llamacpp.extra_buffers import cpu_has_amx, extra_buffers_set, extra_buffers_verdict
from rotscope.errors import BadInput

START_COMMAND = "rotscope serve-llama MODEL.gguf --port 8000"
"""How a user starts the server safely (README, doctor)."""
SERVER_MISSING = "llama-cpp-python's server is not installed: pip install 'llama-cpp-python[server]'"
_SERVER_MODULES = ("llama_cpp", "llama_cpp.server.app", "uvicorn")  # app imports no uvicorn


@dataclass(frozen=True)
class Decision:
    """Whether the server loads its model with extra buffers, and why (one plain phrase)."""

    enabled: bool
    reason: str


def server_missing() -> str | None:
    """``SERVER_MISSING`` when llama-cpp-python or its server's extras (fastapi, uvicorn,
    sse-starlette, ...) do not import, else ``None``."""
    for module in _SERVER_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            return SERVER_MISSING
    return None


def model_argument(arguments: Sequence[str]) -> str | None:
    """The value of the server's ``--model`` option (``--model X`` or ``--model=X``), if given."""
    for index, argument in enumerate(arguments):
        if argument == "--model" and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith("--model="):
            return argument.partition("=")[2]
    return None


def decide(model: str | None, choice: Literal["auto", "on", "off"], has_amx: bool) -> Decision:
    """``on``/``off`` as asked; ``auto``: on without a probe on a CPU without AMX, else the probe's
    verdict for the model file (off when there is no model file to probe)."""
    if choice != "auto":
        return Decision(choice == "on", f"--extra-buffers {choice}")
    if not has_amx:
        return Decision(True, "no AMX on this CPU")
    if model is None or not Path(model).is_file():
        return Decision(False, "AMX on this CPU, and no model file to probe")
    from rotscope.tokenizers.gguf import file_digest

    verdict = extra_buffers_verdict(Path(model), file_digest(Path(model)))
    return Decision(verdict.safe, f"AMX on this CPU: {verdict.reason}")


def serve(arguments: Sequence[str], choice: Literal["auto", "on", "off"] = "auto") -> None:
    """Run ``llama_cpp.server`` in this process with ``arguments`` (its own options: ``--model``,
    ``--port``, ``--n_ctx`` ...), extra buffers as ``decide`` says; returns when the server stops.
    A missing server install is ``BadInput``."""
    missing = server_missing()
    if missing is not None:
        raise BadInput(missing)
    model = model_argument(arguments)
    if model is not None and not Path(model).is_file():
        raise BadInput(f"model file {model} not found")
    decision = decide(model, choice, cpu_has_amx())
    state = "on" if decision.enabled else "off"
    print(f"rotscope: llama.cpp extra buffers {state} ({decision.reason}); starting llama_cpp.server",
          file=sys.stderr, flush=True)  # fmt: skip
    saved = sys.argv
    sys.argv = ["llama_cpp.server", *arguments]
    try:
        with extra_buffers_set(decision.enabled):
            runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved
