"""Errors that mean the user's input is wrong: the CLI prints one line and exits 2."""

from pathlib import Path


class BadInput(Exception):
    """Bad input named precisely: which file, field or value, and what is wrong with it."""


class BackendRefused(BadInput):
    """The provider refused the run itself (bad key, no permission, unknown model): retrying cannot
    help, so the run stops with this one-line message and every finished row is kept."""


class EngineCrashed(Exception):
    """The local engine crashed repeatedly: the run stops (exit 5) with every finished row kept."""


def write_output(path: Path, text: str, what: str) -> None:
    """Write a file the user named; a folder that is missing or not writable is bad input."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BadInput(f"{what}: cannot write {path} ({error.strerror or error})") from None
