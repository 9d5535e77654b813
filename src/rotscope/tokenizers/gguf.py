"""GGUF model files: a check that a path is one, and a fast digest that identifies it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rotscope.errors import BadInput


def check_gguf(path: Path) -> None:
    if not path.is_file():
        raise BadInput(f"model: file {path} not found")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise BadInput(f"model: {path} is not a GGUF file")


def file_digest(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of the first and last MiB and the size: identifies a model file in well under a second."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(chunk))
        handle.seek(max(size - chunk, 0))
        digest.update(handle.read(chunk))
    return digest.hexdigest()[:16]
