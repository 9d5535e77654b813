"""Errors that mean the user's input is wrong: the CLI prints one line and exits 2."""


class BadInput(Exception):
    """Bad input named precisely: which file, field or value, and what is wrong with it."""


class BackendRefused(BadInput):
    """The provider refused the run itself (bad key, no permission, unknown model): retrying cannot
    help, so the run stops with this one-line message and every finished row is kept."""
