"""The vLLM backend's own section of the experiment file (``vllm:``), apart from the backend so
that reading a config never imports vLLM."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from rotscope.config.options import RuntimeOption
from rotscope.config.sections import Float, Int, SectionSpec, StrictOptions


class VllmOptions(StrictOptions):
    """Engine settings of the ``vllm/PATH`` backend (an in-process ``vllm.LLM`` on a local model
    folder). Prefix caching is always on; prompts go as token ids, decoding is greedy."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(
        subject_overrides=True, identity_when_set=False, model_name_form="path"
    )
    """A subject (``subjects:``) may set its keys one by one; the model name after ``vllm/`` is
    read in its form (``rotscope.config.spec.ModelNameForm``). Part of every run identity since
    before sections were registered, so at its defaults too (``identity_when_set=False``: configs
    keep their digests)."""

    batch_size: Annotated[Int, RuntimeOption()] = Field(default=64, gt=0)
    """Consecutive work items (in prefix order) handed to the engine at once; it schedules them
    together and reuses their shared prefixes."""
    gpu_memory_utilization: Annotated[Float, RuntimeOption()] = Field(default=0.9, gt=0.0, le=1.0)
    """The share of GPU memory vLLM may take for weights and KV cache."""
    tensor_parallel_size: Annotated[Int, RuntimeOption()] = Field(default=1, gt=0)
    """GPUs the model is split over (tensor parallelism)."""
    dtype: str = "auto"
    """The weights' and activations' type (``auto``, ``bfloat16``, ``float16``, ``float32``)."""
    enforce_eager: Annotated[bool, RuntimeOption()] = False
    """Skip CUDA graph capture (faster start, slower decoding)."""
