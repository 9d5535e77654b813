"""The vLLM backend's own section of the experiment file (``vllm:``), apart from the backend so
that reading a config never imports vLLM."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from rotscope.config.options import RuntimeOption
from rotscope.config.sections import Float, Int, _Strict


class VllmOptions(_Strict):
    """Engine settings of the ``vllm/PATH`` backend (an in-process ``vllm.LLM`` on a local model
    folder). Prefix caching is always on; prompts go as token ids, decoding is greedy."""

    SUBJECT_OVERRIDES: ClassVar[bool] = True
    """A subject (``subjects:``) may set its keys one by one."""
    MODEL_NAME_FORM: ClassVar[str] = "path"
    """How the model name after ``vllm/`` is read (``rotscope.config.experiment.MODEL_NAME_FORM``)."""

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
