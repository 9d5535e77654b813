"""Source code as filler: an installed package, a directory, or by default the standard library,
its files in the run's seeded order or, with ``filler.order: tree``, in the tree's sorted order."""

from __future__ import annotations

import functools
import importlib.util
import random
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from rotscope._util.decode import read_text
from rotscope.config.experiment import FillerConfig
from rotscope.errors import BadInput
from rotscope.filler import ENCODING_HINT, Document, register_filler

_SKIPPED_PARTS = {"site-packages", "dist-packages", "test", "tests", "__pycache__", "idlelib"}


def _package_root(name: str) -> Path:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise BadInput(f"filler.package: no installed package named {name!r}")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin)
    raise BadInput(f"filler.package: package {name!r} has no source files")


def code_root(config: FillerConfig) -> Path:
    """The folder (or file) whose Python sources make up a code filler."""
    if config.package and config.path:
        raise BadInput("filler: give either package or path for code filler, not both")
    if config.package:
        return _package_root(config.package)
    if config.path:
        root = Path(config.path)
        if not root.exists():
            raise BadInput(f"filler.path: {root} does not exist")
        return root
    return Path(sysconfig.get_paths()["stdlib"])


def source_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        path
        for path in root.rglob("*.py")
        if path.is_file() and not _SKIPPED_PARTS.intersection(path.relative_to(root).parts)
    )


@functools.cache
def _installed_files(root: Path) -> tuple[Path, ...]:
    """``source_files`` of the standard library or an installed package, listed once a process:
    each haystack variant reads the source again in its own order, and walking the standard
    library takes seconds (a search gives each of hundreds of instances a haystack of its own)."""
    return tuple(source_files(root))


KIND = "code"
"""The source's registered name (``filler.kind``), which the codebase family needs."""


@register_filler(KIND, describe=lambda config: f"{KIND}:{config.package or config.path or 'stdlib'}")
def code_documents(
    config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()
) -> Iterator[Document]:
    root = code_root(config)
    files = source_files(root) if config.path else list(_installed_files(root))  # a folder may change
    if not files:
        raise BadInput(f"filler: no Python source files under {root}")
    if config.order == "seeded":
        random.Random(seed).shuffle(files)
    else:  # "tree": paths relative to the root, sorted as text (``source_files`` sorts full paths alike)
        files.sort(key=lambda path: path.relative_to(root).as_posix() if root.is_dir() else path.name)
    for path in files:
        text = read_text(path, config.encoding, ENCODING_HINT)
        if text.strip():
            yield Document(name=str(path.relative_to(root) if root.is_dir() else path.name), text=text)
