"""Text from outside (a model's reply, a server's error, a case file) made safe where it goes: a
store that must encode it as UTF-8, or a terminal that would obey its control sequences.

``storable`` is applied by every writer of stored text (the run store, the response cache);
``terminal_safe`` by every view that prints to a terminal. Files written with ``-o`` keep the
stored text exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
