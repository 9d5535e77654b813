"""Users' own domain text as filler: files by glob, or one field of each line of a JSONL file."""

from __future__ import annotations

import glob
import random
from collections.abc import Iterator
from pathlib import Path

from rotscope._util.decode import read_text
from rotscope._util.jsonl import read_jsonl
from rotscope.config.experiment import FillerConfig
from rotscope.errors import BadInput
from rotscope.filler import ENCODING_HINT, Document, register_filler


def _jsonl_documents(path: Path, field: str, encoding: str) -> list[Document]:
    if not path.is_file():
        raise BadInput(f"filler.jsonl: {path} does not exist")
    found: list[Document] = []
    for number, record in read_jsonl(path, encoding, ENCODING_HINT):
        if field not in record:
            raise BadInput(f"{path}: line {number} has no field {field!r}")
        value = record[field]
        if not isinstance(value, str):
            raise BadInput(f"{path}: line {number}: field {field!r} is not a string")
        found.append(Document(name=f"{path.name}:{number}", text=value))
    return found


def _glob_documents(pattern: str, encoding: str) -> list[Document]:
    paths = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
    return [Document(name=str(path), text=read_text(path, encoding, ENCODING_HINT)) for path in paths]


@register_filler("text", describe=lambda config: f"text:{config.glob or config.jsonl}")
def text_documents(
    config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()
) -> Iterator[Document]:
    if bool(config.glob) == bool(config.jsonl):
        raise BadInput("filler: text filler needs exactly one of glob or jsonl")
    if config.jsonl:
        found = _jsonl_documents(Path(config.jsonl), config.field, config.encoding)
        origin = config.jsonl
    else:
        assert config.glob is not None
        found = _glob_documents(config.glob, config.encoding)
        origin = config.glob
        if not found:
            raise BadInput(f"filler.glob: {origin} matches no files")
    found = [document for document in found if document.text.strip()]
    if not found:
        raise BadInput(f"filler: corpus {origin} is empty (no non-blank documents)")
    random.Random(seed).shuffle(found)
    yield from found
