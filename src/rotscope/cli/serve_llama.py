"""rotscope serve-llama."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from rotscope.cli.common import _guarded, app


@app.command(
    "serve-llama",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def serve_llama(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="A GGUF file, or 'bundled' for the bundled model.")],
    extra_buffers: Annotated[
        str,
        typer.Option(
            "--extra-buffers",
            help="llama.cpp's extra buffers: auto (off on AMX CPUs where the probe crashed), on, off.",
        ),
    ] = "auto",
) -> None:
    """Start llama-cpp-python's OpenAI-compatible server (python -m llama_cpp.server) on MODEL,
    safe on CPUs with AMX; every further option goes to the server (--port 8000 --n_ctx 8192 ...).
    Then run with --model openai/NAME --base-url http://127.0.0.1:8000/v1."""

    def body() -> None:
        from rotscope.backends.llamacpp.backend import bundled_model_path
        from rotscope.backends.llamacpp.server import serve
        from rotscope.errors import BadInput

        if extra_buffers not in ("auto", "on", "off"):
            raise BadInput(f"--extra-buffers takes auto, on or off, not {extra_buffers!r}")
        choice: Literal["auto", "on", "off"] = (
            "on" if extra_buffers == "on" else "off" if extra_buffers == "off" else "auto"
        )
        path = str(bundled_model_path()) if model == "bundled" else model
        serve(["--model", path, *ctx.args], choice)

    _guarded(body)
