"""The rotscope command line with one more model, ``slow-remote/NAME``: the lexical fake run as a
remote API whose every call takes ``SLOW_ROTSCOPE_LATENCY_S`` seconds (default 0.2) and, when
``SLOW_ROTSCOPE_GATE`` names a file, whose calls after the first wait until that file exists; so a
test can meet a run mid-way for as long as it needs. Run as ``python slow_rotscope.py run ...``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rotscope.backends import register_backend
from rotscope.backends.fake import FakeBackend, responder_for
from rotscope.cli import main
from rotscope.config.experiment import ExperimentConfig
from rotscope.types import Completion, GenerateRequest


class GatedBackend(FakeBackend):
    def __init__(self, name: str, latency_s: float, gate: Path | None) -> None:
        super().__init__(name, responder_for(name), provider="slow-remote", latency_s=latency_s)
        self.gate = gate

    async def generate(self, request: GenerateRequest) -> Completion:
        while self.gate is not None and self.calls > 0 and not self.gate.exists():
            await asyncio.sleep(0.05)
        return await super().generate(request)


@register_backend("slow-remote", hint="slow-remote/NAME: the fake, slowly (tests only)")
def slow_remote(name: str, config: ExperimentConfig) -> FakeBackend:
    gate = os.environ.get("SLOW_ROTSCOPE_GATE")
    latency = float(os.environ.get("SLOW_ROTSCOPE_LATENCY_S", "0.2"))
    return GatedBackend(name, latency, Path(gate) if gate else None)


if __name__ == "__main__":
    main()
