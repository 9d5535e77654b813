"""``rotscope doctor``: is this machine ready for a run? Each backend's own machine checks (the
llama.cpp backend's engine build, CPU features, extra-buffer verdict, prefill benchmark and
tokenizer round trip: ``rotscope.backends.llamacpp.doctor``), the cache folder, optional extras.

A check that fails (``FAIL``) means a run cannot work; ``warn`` means a part of rotscope is
unavailable (an optional extra, or Chromium, which only the HTML report's browser test uses; the
figures need no browser). The measured speeds are kept in the user's cache folder, so
``rotscope run --dry-run`` can estimate a local run's time, with the fastest thread count, which a
llama.cpp run uses where its config leaves it unset.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Callable
from importlib.metadata import version

from rotscope._util.checks import Check
from rotscope._version import __version__
from rotscope.backends import BACKENDS, Extra
from rotscope.types import Backend

_OPTIONAL = (
    Extra("pyarrow", "pyarrow", "parquet"),
    Extra("matplotlib", "matplotlib", "figures"),
    Extra("ray", "ray", "ray"),
    Extra("inspect-ai", "inspect_ai", "inspect"),
)
"""rotscope's own optional extras (exports, figures, the Ray executor, Inspect); a backend's SDK is
declared by the backend (``register_backend(extra=...)``) and checked before these."""


def _cache_check() -> Check:
    from rotscope.execution.calls.response_cache import default_cache_path

    folder = default_cache_path().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as error:
        return Check("cache folder", "FAIL", f"{folder} is not writable ({error.strerror or error})")
    return Check("cache folder", "ok", f"{folder} writable")


def _browser_check() -> Check:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        return Check(
            "chromium",
            "warn",
            "not found: used only by the browser test of the HTML report, which is skipped "
            "(apt install chromium); reports and --figures need no browser",
        )
    return Check("chromium", "ok", found)


def _extra_checks() -> list[Check]:
    declared = [entry.extra for _, entry in BACKENDS.items() if entry.extra is not None]
    checks = []
    for extra in [*dict.fromkeys(declared), *_OPTIONAL]:
        if _missing(extra.module):
            checks.append(
                Check(extra.package, "warn", f"not installed (pip install rotscope[{extra.extra}])")
            )
        else:
            checks.append(Check(extra.package, "ok", version(extra.package)))
    return checks


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # the parent package is missing
        return True


def in_worker(engine: Backend) -> Backend:
    """``engine`` in a worker process of its own, given up after one crash (a backend's checks)."""
    from rotscope.execution.executors.worker import WorkerBackend

    return WorkerBackend(engine, max_crashes=1)


def run_checks() -> list[Check]:
    """Every check, in the order ``doctor`` prints them: rotscope, each backend's own machine checks
    (``register_backend(checks=...)``: llama.cpp's engine, ``rotscope.backends.llamacpp.doctor``),
    the cache folder, the browser, the optional extras."""
    checks = [Check("rotscope", "ok", f"{__version__} on Python {sys.version.split()[0]}")]
    for _, entry in BACKENDS.items():
        if entry.checks is not None:
            checks.extend(entry.checks(in_worker))
    steps: tuple[Callable[[], Check | list[Check]], ...] = (_cache_check, _browser_check, _extra_checks)
    for step in steps:
        found = step()
        checks.extend(found if isinstance(found, list) else [found])
    return checks
