"""Reading users' text files with one declared encoding, strictly: a byte that does not decode is
bad input naming the file and the byte's offset, never a silent U+FFFD."""

from __future__ import annotations

import codecs
from pathlib import Path

from rotscope.errors import BadInput

__all__ = ["check_encoding", "decode", "read_text"]


def check_encoding(name: str) -> str:
    """``name`` if Python knows a text codec of that name; ``ValueError`` otherwise."""
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise ValueError(f"unknown encoding {name!r} (a Python codec: utf-8, latin-1, cp1252...)") from None
    if not getattr(info, "_is_text_encoding", True):
        raise ValueError(f"{name!r} is not a text encoding")
    return name


def decode(data: bytes, encoding: str, where: str, hint: str = "") -> str:
    """``data`` decoded strictly; the first invalid byte is ``BadInput`` naming ``where`` and its offset."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        name = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
        raise BadInput(
            f"{where}: not {name} text: invalid byte 0x{data[error.start]:02x} at offset {error.start}{hint}"
        ) from None


def read_text(path: Path, encoding: str = "utf-8", hint: str = "") -> str:
    """The text of ``path`` decoded strictly with ``encoding`` (see ``decode``), line breaks read
    as ``Path.read_text`` reads them (CRLF and CR as LF)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
    text = decode(data, encoding, str(path), hint)
    return text.replace("\r\n", "\n").replace("\r", "\n")
