"""What Inspect loads through rotscope's ``inspect_ai`` entry point: the ``rotscope`` model
provider and the tasks ``rotscope/niah``, ``rotscope/nolima`` and ``rotscope/experiment``."""

from __future__ import annotations

from inspect_ai.model import ModelAPI, modelapi

from rotscope.integrations.inspect.provider import RotscopeModelAPI
from rotscope.integrations.inspect.tasks import experiment, niah, nolima

__all__ = ["experiment", "niah", "nolima", "rotscope"]


@modelapi(name="rotscope")
def rotscope() -> type[ModelAPI]:
    """``--model rotscope/<rotscope model name>``."""
    return RotscopeModelAPI
