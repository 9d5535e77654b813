"""Reading JSON Lines files that users give (filler text, reasoning items): each problem is bad
input naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rotscope._util.decode import read_text
from rotscope.errors import BadInput


def read_jsonl(path: Path, encoding: str = "utf-8", hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of ``path``, decoded strictly (``read_text``)."""
    lines = read_text(path, encoding, hint).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BadInput(f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise BadInput(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record
