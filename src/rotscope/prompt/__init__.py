"""Rendering prompts: the builder and its frame, placement of evidence, verification of spans and
joints, and the consistency of a case's layouts."""

from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.prompt.frame import Frame
from rotscope.prompt.placement import target_depths
from rotscope.prompt.variants import VariantSignature, inconsistent_cases, keep_consistent, signature
from rotscope.prompt.verify import verify_prompt

__all__ = [
    "Frame",
    "PlacementError",
    "PromptBuilder",
    "VariantSignature",
    "inconsistent_cases",
    "keep_consistent",
    "signature",
    "target_depths",
    "verify_prompt",
]
