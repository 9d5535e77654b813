"""The speed a local engine is expected to reach, so a run can say early when its machine is far
slower (``report.pace``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpeedReference:
    """Prompt tokens per second the engine prefills at on ``source`` (the bundled model on the
    reference machine, or what ``rotscope doctor`` measured here), and the tokens per second it
    generates there where that is known."""

    prefill_tps: float
    source: str
    decode_tps: float | None = None
