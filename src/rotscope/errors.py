"""Errors that mean the user's input is wrong: the CLI prints one line and exits 2."""


class BadInput(Exception):
    """Bad input named precisely: which file, field or value, and what is wrong with it."""
