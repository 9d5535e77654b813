"""An imported file read within stated bounds: a regular file (not a folder, FIFO, device or socket:
a symlink to ``/dev/zero`` is refused before a byte is read), at most ``MAX_FILE_BYTES``, split into
lines of at most ``MAX_LINE_BYTES`` as it is read, each decoded as UTF-8 on its own so a bad byte
names its line. Memory stays bounded by the caps (``imports.table`` caps the rows too), whatever
the file holds; every refusal is one ``BadInput`` line naming the file and the line.

Lines end at ``\\n`` only (``_util.jsonl``: U+2028 and its kin are text inside a JSON string); a
CSV file also ends a line at a lone ``\\r`` (old Mac files), as Python's csv module does.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from rotscope.errors import BadInput

MAX_FILE_BYTES = 1 << 30
"""The largest file ``rotscope import`` reads (1 GiB): larger is refused before it is read."""
MAX_LINE_BYTES = 1 << 20
"""The longest line (1 MiB)."""

_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def open_regular(path: Path, shown: str) -> BinaryIO:
    """``path`` open for reading, refused unless it is a regular file within ``MAX_FILE_BYTES``
    (opened without blocking, so a FIFO with no writer is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"{shown}: no such file") from None
    except OSError as error:
        raise BadInput(f"{shown}: cannot read it ({error.strerror or error})") from None
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise BadInput(f"{shown}: a folder, not a file")
        if not stat.S_ISREG(mode.st_mode):
            raise BadInput(f"{shown}: {_kind(mode.st_mode)}, not a regular file (import reads files)")
        if mode.st_size > MAX_FILE_BYTES:
            raise BadInput(
                f"{shown}: {mode.st_size:,} bytes, over the {MAX_FILE_BYTES:,} bytes an import reads "
                "(split the file)"
            )
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def text_lines(handle: BinaryIO, shown: str, *, lone_cr: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text with its line end) of each line of ``handle``, a byte-order mark dropped;
    ``lone_cr`` also ends a line at a ``\\r`` not followed by ``\\n`` (CSV). A line over
    ``MAX_LINE_BYTES``, a file that grew past ``MAX_FILE_BYTES`` while read, and bytes that are
    not UTF-8 are refused naming the line."""
    number, read = 0, 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        read += len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise BadInput(
                f"{shown}: line {number}: longer than {MAX_LINE_BYTES:,} bytes (the limit of a line)"
            )
        if read > MAX_FILE_BYTES:
            raise BadInput(f"{shown}: over the {MAX_FILE_BYTES:,} bytes an import reads (split the file)")
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadInput(
                f"{shown}: line {number}: not UTF-8 text (byte {error.start + 1} of the line)"
            ) from None
        if not lone_cr or "\r" not in text:
            yield number, text
            continue
        for part in _LONE_CR.split(text):
            if part:
                yield number, part
                number += 1
        number -= 1
