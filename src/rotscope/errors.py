"""Errors that mean the user's input is wrong: the CLI prints one line and exits 2."""

import errno
import sqlite3
from pathlib import Path


class BadInput(Exception):
    """Bad input named precisely: which file, field or value, and what is wrong with it."""


class BackendRefused(BadInput):
    """The provider refused the run itself (bad key, no permission, unknown model): retrying cannot
    help, so the run stops with this one-line message and every finished row is kept."""


class SessionNotWritten(BadInput):
    """The model could not write the session its prompts are cut from (``filler.assistant: model``):
    the run cannot be planned, so it stops with this one line before any prompt is stored. The
    session written so far is kept as a partial file, never as a finished one, and running again
    continues it."""


class SessionStopped(Exception):
    """Writing the model's own session stopped before it was finished, by Ctrl-C or because its
    next call could take the spend above ``max_cost``: the turns written so far are kept as a
    partial file, and the message says how to continue (exit 130 or 4, not bad input)."""

    def __init__(self, message: str, *, budget: bool) -> None:
        super().__init__(message)
        self.budget = budget


class EngineCrashed(Exception):
    """The local engine crashed repeatedly: the run stops (exit 5) with every finished row kept."""


class OutputFailed(BadInput):
    """The run folder or an output could not be written for a reason outside rotscope (disk full,
    read-only file system, no permission, a file where a folder belongs): one line and exit 2, with
    everything finished before it kept, instead of a traceback."""


_OS_REASONS = {
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
}
_SQLITE_REASONS = {
    "database or disk is full": "disk full",
    "attempt to write a readonly database": "read-only file system or no permission",
    "disk i/o error": "disk I/O error",
    "unable to open database file": "cannot open or create the file",
}


def write_failure(error: BaseException) -> str | None:
    """Why a write failed, in a few words, when the cause lies outside rotscope (the disk, the file
    system, permissions); ``None`` for any other error, which stays a bug worth a traceback."""
    if isinstance(error, sqlite3.OperationalError):
        text = str(error).lower()
        return next((reason for key, reason in _SQLITE_REASONS.items() if key in text), None)
    if isinstance(error, OSError) and error.errno is not None:
        return _OS_REASONS.get(error.errno)
    return None


def write_output(path: Path, text: str, what: str) -> None:
    """Write a file the user named; a folder that is missing or not writable is bad input."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BadInput(f"{what}: cannot write {path} ({error.strerror or error})") from None
