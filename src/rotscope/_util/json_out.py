"""Every JSON a command prints or writes for others to read is valid JSON: Python's ``json`` writes
``Infinity`` and ``NaN``, which no JSON parser but Python's own accepts (docs/commands.md, "JSON
output"). ``json_text`` writes a non-finite number as ``null``, as pydantic's own JSON does;
``record_text``, for a record checked against its schema before it is shown (a comparison, a gate's
verdict, a monitor report), refuses one in one line naming its key, since its schema has no null
there. Both refuse anything else that is not JSON (``allow_nan=False``)."""

from __future__ import annotations

import json
import math
from typing import Any

from rotscope.errors import BadInput


def finite(value: Any) -> Any:
    """``value`` with every non-finite float, however deep in lists, tuples and dicts, as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def non_finite_key(value: Any, key: str = "") -> str | None:
    """The dotted key of the first non-finite float in ``value`` (``leaderboard.0.cost_usd``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return key or "(top)"
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list | tuple)
        else ()
    )
    for name, item in items:
        found = non_finite_key(item, f"{key}.{name}" if key else str(name))
        if found is not None:
            return found
    return None


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with non-finite numbers as ``null``: always valid JSON."""
    return json.dumps(finite(value), allow_nan=False, **options)


def record_text(value: Any, record: str, **options: Any) -> str:
    """``json.dumps(value, **options)`` of a ``record`` checked against its schema: a non-finite
    number is bad input naming its key (a stored value out of range), never ``Infinity``."""
    key = non_finite_key(value)
    if key is not None:
        raise BadInput(
            f"{record}: {key} is not a finite number (a stored value out of range): no JSON to write"
        )
    return json.dumps(value, allow_nan=False, **options)
