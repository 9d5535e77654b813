"""JSON Lines, read and written one way across rotscope: a line ends at ``\\n`` and nowhere else.

``str.splitlines`` also ends a line at U+2028, U+2029, U+0085 (and form feed, vertical tab, the
file and group separators), which a JSON string may hold as they are: a file split there is read
as broken JSON. Every JSON Lines file rotscope reads (case files, replay files, transcripts, filler
and reasoning items, the sessions a model writes) goes through ``jsonl_lines``, and every one it
writes with its text readable (``cases -o``, those sessions) through ``jsonl_line``; the row
export (``export --format jsonl``) escapes every non-ASCII character, so it is safe as it is.
A file that is still being appended to is cut at its last complete line as bytes, before
anything is decoded (``complete_lines``): a crash inside a multi-byte character leaves a tail
that is no text at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rotscope._util.decode import decode
from rotscope.errors import BadInput

__all__ = ["complete_lines", "jsonl_line", "jsonl_lines", "read_jsonl"]

_ESCAPED = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")
"""Characters a JSON string may hold as they are but a line should not: the separators other
readers split at, and lone surrogates, which UTF-8 cannot encode."""
_JSON_WHITESPACE = " \t\r"


def jsonl_line(record: Any) -> str:
    """``record`` as one line of JSON Lines, its ``\\n`` included. Text stays readable (no ASCII
    escapes), except U+0085, U+2028, U+2029 and lone surrogates, written as ``\\uXXXX``: the line
    encodes as UTF-8, no reader that splits at those can cut it, and it reads back equal. (Two
    surrogates in a row that form a pair read back as the one character they encode, as JSON
    defines.)"""
    text = json.dumps(record, ensure_ascii=False)
    return _ESCAPED.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) for each line of ``text`` that is not blank, lines ended by ``\\n``
    only (a ``\\r`` before it is JSON whitespace, so CRLF files read too)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip(_JSON_WHITESPACE):
            yield number, line


def complete_lines(path: Path) -> bytes:
    """The bytes of ``path`` up to and including its last ``\\n``; the tail after it (a line a
    crash cut short) is cut off the file, so lines appended next follow a whole line."""
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with path.open("r+b") as file:
            file.truncate(len(whole))
    return whole


def read_jsonl(path: Path, encoding: str = "utf-8", hint: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of ``path``, decoded strictly (``decode``);
    each problem is bad input naming the file and line."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
    for number, line in jsonl_lines(decode(data, encoding, str(path), hint)):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BadInput(f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise BadInput(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record
