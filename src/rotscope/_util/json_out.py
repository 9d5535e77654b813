"""Every JSON a command prints or writes for others to read is valid JSON: Python's ``json`` writes
``Infinity`` and ``NaN``, which no JSON parser but Python's own accepts. ``json_text`` writes a
non-finite number as ``null`` (docs/commands.md, "JSON output") and then refuses anything else
that is not JSON (``allow_nan=False``), as pydantic's own JSON does."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float, however deep in lists, tuples and dicts, as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with non-finite numbers as ``null``: always valid JSON."""
    return json.dumps(finite(value), allow_nan=False, **options)
