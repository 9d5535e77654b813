"""Folders are the boundary: a path rotscope reads out of a folder's own files (a session's
subject folders, a search's step folders, the model's own session) or deletes there must lead
inside that folder once ``..`` and links are followed, or the command is refused before it writes
or deletes anything (issue 52: a hand-edited ``session.json`` naming ``../V`` once emptied ``V``).

A file rotscope writes in a folder under a name of its own (a temporary file, a lock) is opened
without following a link left at that name (``open_own``): a link planted there would otherwise
carry the write to wherever it points."""

from __future__ import annotations

import os
from pathlib import Path

from rotscope.errors import BadInput


def inside(folder: Path, path: Path, *, what: str = "") -> Path:
    """``path`` resolved, when it lies strictly inside ``folder`` (both resolved: ``..`` and links
    followed, a path that does not exist yet resolved as far as it does); ``BadInput`` in one line
    otherwise, or when the path cannot be resolved at all (a NUL byte, a name too long, a loop)."""
    label = f"{what}: " if what else ""
    try:
        base = folder.resolve()
        target = path.resolve()
    except (OSError, ValueError, RuntimeError) as error:
        raise BadInput(f"{label}{_shown(path)} cannot be a path inside {_shown(folder)} ({error})") from None
    if target == base or not target.is_relative_to(base):
        raise BadInput(f"{label}{_shown(path)} leads outside {_shown(folder)} (to {_shown(target)}); refused")
    return target


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a file rotscope names in a folder of its own, never through a link at that
    name: a link there is removed first when ``flags`` create the file anew (``O_TRUNC``; removing a
    link touches nothing it points to), else refused (``BadInput``)."""
    if flags & os.O_TRUNC and path.is_symlink():
        path.unlink()
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as error:
        if path.is_symlink():
            raise BadInput(
                f"{_shown(path)} is a link, where rotscope keeps a file of its own; remove it and run again"
            ) from None
        raise error


def _shown(path: Path | str) -> str:
    """A path for a one-line message: its characters below U+0020 (a NUL byte, a line break) shown
    escaped, so the message stays one line."""
    return "".join(ch if ch >= " " else f"\\x{ord(ch):02x}" for ch in str(path))
