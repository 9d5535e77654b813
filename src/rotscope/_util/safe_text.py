"""Text from outside (a model's reply, a server's error, a case file) made safe where it goes: a
store that must encode it as UTF-8, or a terminal that would obey its control sequences.

``storable`` is applied by every writer of stored text (the run store, the response cache);
``terminal_safe`` by every view that prints to a terminal, ``markdown_safe`` (the same escapes,
then Markdown's) by every Markdown view, so a model, task or folder name reads the same in each.
Files written with ``-o`` keep the stored text exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_UNSAFE_ON_TERMINAL = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f"  # C0 controls but tab and newline (ESC, BEL, CR, ...), and DEL
    "\x80-\x9f"  # C1 controls (CSI \x9b, OSC \x9d, ...), which some terminals obey
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, overrides
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates: no terminal encoding can write them
    "]"
)


def storable(text: str) -> str:
    """``text`` as valid Unicode: each lone surrogate (``"\\ud800"`` in a reply's JSON, which no
    UTF-8 writer can encode) becomes U+FFFD; a surrogate pair becomes the character it encodes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def storable_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every text value made ``storable`` (other values unchanged)."""
    return {key: storable(value) if isinstance(value, str) else value for key, value in values.items()}


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on shown as its escape (``\\x1b``,
    ``\\x9b``, ``\\u202e``): no clear-screen, window title, hyperlink or reordered line can come
    from a reply. Tab and newline stay."""
    return _UNSAFE_ON_TERMINAL.sub(_escaped, text)


_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]{}|~#!])")


def markdown_safe(value: Any) -> str:
    """``value`` as inline Markdown text: one line (every run of whitespace, CR and U+2028 among
    them, one space), no HTML (``<``, ``>``, ``&`` as entities), Markdown's active characters
    (``|`` and backticks among them) escaped, and what a terminal would act on ``terminal_safe``: a
    table cell stays one cell and the text reads the same printed as rendered."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_ACTIVE.sub(r"\\\1", terminal_safe(text))


def terminal_safe_tree(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, text) with every text in it ``terminal_safe``."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, Mapping):
        return {terminal_safe_tree(key): terminal_safe_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [terminal_safe_tree(item) for item in value]
    if isinstance(value, tuple):
        return tuple(terminal_safe_tree(item) for item in value)
    return value
