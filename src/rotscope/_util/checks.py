"""One line of ``rotscope doctor``'s table: a check's name, its status and what it found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "warn", "FAIL"]
"""``FAIL``: a run cannot work; ``warn``: a part of rotscope is unavailable (an optional extra)."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
