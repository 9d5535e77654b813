"""The command line: one module per command, each registering on the typer app of ``common``;
a command parses its arguments, calls the library and prints. ``main`` is the console script."""

from rotscope.cli import canary as _canary  # noqa: F401
from rotscope.cli import cases as _cases  # noqa: F401
from rotscope.cli import compare as _compare  # noqa: F401
from rotscope.cli import doctor as _doctor  # noqa: F401
from rotscope.cli import export as _export  # noqa: F401
from rotscope.cli import gate as _gate  # noqa: F401
from rotscope.cli import import_ as _import  # noqa: F401
from rotscope.cli import models as _models  # noqa: F401
from rotscope.cli import monitor as _monitor  # noqa: F401
from rotscope.cli import perturb as _perturb  # noqa: F401
from rotscope.cli import plan as _plan  # noqa: F401
from rotscope.cli import report as _report  # noqa: F401
from rotscope.cli import run as _run  # noqa: F401  (the order here is the order of --help)
from rotscope.cli import serve_llama as _serve_llama  # noqa: F401
from rotscope.cli import show as _show  # noqa: F401
from rotscope.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_BUDGET,
    EXIT_ENGINE_CRASHED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    app,
    main,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_BUDGET",
    "EXIT_ENGINE_CRASHED",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "app",
    "main",
]
