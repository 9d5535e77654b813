"""Where the evidence goes: parsed once from the experiment file into a typed ``Position``, stored in
a row as its depth and position columns, and read back from them into the same value."""

from __future__ import annotations

from dataclasses import dataclass

NAMED_POSITIONS: dict[str, float] = {
    "beginning": 0.0,
    "early-middle": 0.25,
    "midpoint": 0.5,
    "late-middle": 0.75,
    "end": 1.0,
}
OFFSET_PREFIX = "@"
"""A depth ``"@N"`` is an absolute offset: N filler tokens precede the evidence, at every length."""


@dataclass(frozen=True)
class Position:
    """A fraction of the filler before the evidence (0 first, 1 last), a named position (its name
    and fraction), an absolute offset (``@N``: N filler tokens before it, whatever the length; its
    fraction depends on the length and is ``None`` here), or a layout a family names itself."""

    fraction: float | None
    name: str | None = None
    offset_tokens: int | None = None

    @classmethod
    def parse(cls, value: float | int | str) -> Position:
        """A position from the experiment file; ``ValueError`` naming what is wrong."""
        if isinstance(value, bool):
            raise ValueError(f"depth {value!r} is not a number or a position name")
        if isinstance(value, int | float):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"depth {value} is outside [0, 1]")
            return cls(float(value))
        if value.startswith(OFFSET_PREFIX):
            digits = value.removeprefix(OFFSET_PREFIX)
            if not digits.isdigit():
                raise ValueError(
                    f"offset {value!r} is not {OFFSET_PREFIX} followed by a whole number of tokens"
                )
            return cls(None, value, int(digits))
        if value not in NAMED_POSITIONS:
            names = ", ".join(NAMED_POSITIONS)
            raise ValueError(
                f"unknown position {value!r} (use a fraction in [0, 1], {names}, "
                f"or {OFFSET_PREFIX}N for N filler tokens before the evidence)"
            )
        return cls(NAMED_POSITIONS[value], value)

    @classmethod
    def from_stored(cls, position: str | None, depth: float) -> Position:
        """The position a row (or layout) was planned at, from its ``position`` and ``depth``."""
        if position is None:
            return cls(float(depth))
        if position.startswith(OFFSET_PREFIX):
            return cls.parse(position)
        return cls(NAMED_POSITIONS.get(position, float(depth)), position)

    @property
    def stored(self) -> str | None:
        """The row's ``position`` column (a fraction is its ``depth`` alone)."""
        return self.name

    @property
    def label(self) -> str:
        """How views name it: the name or offset, else the fraction (``fraction_label``)."""
        return self.name if self.name is not None else fraction_label(self.fraction)


def fraction_label(fraction: float | None) -> str:
    """A depth as views and pairings name it: two places (``0.50``), more where two places would
    round it (``0.011`` and ``0.014``, a sigmoid-spaced grid, stay two positions), at most four."""
    if fraction is None:
        return "unknown"
    for places in (2, 3, 4):
        if abs(round(fraction, places) - fraction) < 1e-9:
            return f"{fraction:.{places}f}"
    return f"{fraction:.4f}"
