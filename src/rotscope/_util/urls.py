"""A server's address as the user gives it (``--base-url``, ``remote.base_url``, ``serve.base_url``),
checked by one rule before any request is made: ``http(s)://HOST[:PORT][/PATH]``, no control
character, space or other whitespace anywhere (``urllib`` quietly drops a tab or newline that an HTTP
client then refuses mid-run), a host, a port that is a number in range. Several addresses (a
``serve/NAME`` model's replicas) are comma separated, spaces around the commas allowed."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000\ufeff]")
"""Control characters (C0, DEL, C1), spaces and the invisible or bidirectional marks."""
EXAMPLE = "e.g. http://127.0.0.1:8000/v1"


def url_problem(url: str) -> str | None:
    """Why ``url`` (one address) is not a server's address, in words; ``None`` when it is one."""
    unsafe = _UNSAFE.search(url)
    if unsafe is not None:
        return f"holds U+{ord(unsafe.group()):04X} (a control character or space)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number in range)
    except ValueError:
        return f"not an http(s) URL with a host, {EXAMPLE}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http(s) URL with a host, {EXAMPLE}"
    return None


def urls_problem(given: str) -> str | None:
    """Why ``given`` (comma-separated addresses) is not a list of server addresses; ``None`` when
    every one is one."""
    parts = [part.strip(" ") for part in given.split(",")]
    if not any(parts):
        return f"no address, {EXAMPLE}"
    for part in parts:
        if not part:
            continue
        problem = url_problem(part)
        if problem is not None:
            return f"{_shown(part)}: {problem}"
    return None


def _shown(url: str) -> str:
    """An address as a message shows it: quoted and escaped, at most 80 characters."""
    text = repr(url)
    return text if len(text) <= 80 else text[:77] + "..."
