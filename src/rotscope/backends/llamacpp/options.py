"""The llama.cpp backend's own section of the experiment file (``llamacpp:``), apart from the
backend so that reading a config never imports llama-cpp-python."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from rotscope.config.options import RuntimeOption
from rotscope.config.sections import Int, OptionalInt, SectionSpec, StrictOptions


class LlamaCppOptions(StrictOptions):
    """Engine settings of the llama.cpp backend. A thread count left unset is tuned per machine by
    ``rotscope doctor``, else one per usable CPU; the batch default is measured on 2 CPU cores with
    the bundled model (benchmarks/engine_settings.py): 256 prefills 2,000 tokens at 226 tok/s
    against 173 tok/s with 2,048."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(
        subject_overrides=True, identity_when_set=False, model_name_form="path"
    )
    """A subject (``subjects:``) may set its keys one by one; the model name after ``llamacpp/`` is
    read in its form (``rotscope.config.spec.ModelNameForm``). Part of every run identity since
    before sections were registered, so at its defaults too (``identity_when_set=False``: configs
    keep their digests)."""

    n_threads: Annotated[OptionalInt, RuntimeOption()] = Field(default=None, gt=0)
    """``None``: the thread count ``rotscope doctor`` measured prefilling fastest on this machine with
    this model file and as many usable CPUs (its affinity) as now, else one thread per usable CPU.
    The run's metadata and engine line say which it used and why."""
    n_batch: Int = Field(default=256, gt=0)
    """Prompt tokens per prefill batch (``n_batch`` and ``n_ubatch``). Never tuned behind a run's
    back: it is part of the experiment's identity (it can change the logits in their last bits), so
    ``rotscope doctor`` times 128, 256 and 512 and says when another is faster here."""
    prefix_cache: Annotated[bool, RuntimeOption()] = True
    """Keep the KV cache of the previous prompt and evaluate only what differs; ``false`` runs
    every prompt cold (the correctness guard compares both)."""
    state_cache_mb: Annotated[Int, RuntimeOption()] = Field(default=0, ge=0)
    """Memory for saved engine states (llama.cpp's RAM cache), so a prompt whose prefix was
    evaluated earlier, but not just before, starts from it. Off by default: the trie order already
    evaluates each distinct prefix once; it helps orders that are not prefix-sorted."""
    extra_buffers: Annotated[Literal["auto", "on", "off"], RuntimeOption()] = "auto"
    """llama.cpp's extra weight buffers (CPU repack, AMX): ``auto`` uses them where a probe in a child
    process showed a multi-token prefill runs with them (once per machine and model file; AMX
    crashes there), ``off`` never, ``on`` always."""
