"""The transformers backend's own section of the experiment file (``hf:``), apart from the
backend so that reading a config never imports torch."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from rotscope.config.options import RuntimeOption
from rotscope.config.sections import OptionalInt, SectionSpec, StrictOptions


class HfOptions(StrictOptions):
    """Engine settings of the Hugging Face transformers backend (``hf/PATH``, ``rotscope[hf]``)."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(
        subject_overrides=True, identity_when_set=False, model_name_form="path"
    )
    """A subject (``subjects:``) may set its keys one by one; the model name after ``hf/`` is
    read in its form (``rotscope.config.spec.ModelNameForm``). Part of every run identity since
    before sections were registered, so at its defaults too (``identity_when_set=False``: configs
    keep their digests)."""

    device: Literal["auto", "cpu", "cuda"] = "auto"
    """``auto``: the first CUDA device when torch sees one, else the CPU."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """The weights' type in memory (a GGUF file is dequantized to it)."""
    n_threads: Annotated[OptionalInt, RuntimeOption()] = Field(default=None, gt=0)
    """torch's CPU threads (``torch.set_num_threads``); ``None``: one per usable CPU (its affinity)."""
    prefix_cache: Annotated[bool, RuntimeOption()] = True
    """Keep the KV cache of the previous prompt, cropped to the prefix the next prompt shares, and
    evaluate only the rest; ``false`` runs every prompt cold."""
