"""The core types of rotscope: read this package first.

Data flows one way: a task family builds ``Case``s (``case``); a ``Layout`` says where each
evidence piece goes in which filler and at what length; the layout step renders a
``RenderedPrompt`` with exact token spans (``rendering``); a ``WorkItem`` pairs it with a model and
trial, and a ``Backend`` turns its ``GenerateRequest`` into a ``Completion`` (``call``); a scorer
turns that into a ``Score`` (``score``); a backend that ``ReadsLikelihood`` turns a
``LikelihoodRequest`` (the prompt and the gold answer's forms as token ids) into a ``Likelihood``.
The protocols a component implements (``Tokenizer``, ``Backend``, ``ReadsLikelihood``,
``TaskFamily``, ``PlansOwnPrompts``) are in ``protocols``.

Every name is importable from ``rotscope.types`` itself, the one import a component (built-in or
outside) needs: ``from rotscope.types import Case, Evidence, Oracle``.
"""

from __future__ import annotations

from rotscope.types.call import (
    DEFAULT_MAX_TOKENS,
    AnswerStop,
    Completion,
    GenerateRequest,
    GenerationParams,
    Likelihood,
    LikelihoodRequest,
    PrefixGroup,
    WorkItem,
)
from rotscope.types.case import (
    ABSENT_SUFFIX,
    EVIDENCE_ONLY_POSITION,
    EVIDENCE_ONLY_SUFFIX,
    AnswerKind,
    Case,
    Claims,
    Evidence,
    Haystack,
    Oracle,
    PinnedDepths,
    Role,
)
from rotscope.types.manifest import Manifest
from rotscope.types.pace import SpeedReference
from rotscope.types.protocols import (
    Backend,
    BackendDescription,
    BatchingBackend,
    Capabilities,
    PlansOwnPrompts,
    ReadsLikelihood,
    ReadsLikelihoodBatch,
    TaskFamily,
    Tokenizer,
)
from rotscope.types.rendering import FamilyPrompts, Layout, Rejection, RenderedPrompt, Span
from rotscope.types.score import ClaimReport, Outcome, Score

__all__ = [
    "ABSENT_SUFFIX",
    "DEFAULT_MAX_TOKENS",
    "EVIDENCE_ONLY_POSITION",
    "EVIDENCE_ONLY_SUFFIX",
    "AnswerKind",
    "AnswerStop",
    "Backend",
    "BackendDescription",
    "BatchingBackend",
    "Capabilities",
    "Case",
    "ClaimReport",
    "Claims",
    "Completion",
    "Evidence",
    "FamilyPrompts",
    "GenerateRequest",
    "GenerationParams",
    "Haystack",
    "Layout",
    "Likelihood",
    "LikelihoodRequest",
    "Manifest",
    "Oracle",
    "Outcome",
    "PinnedDepths",
    "PlansOwnPrompts",
    "PrefixGroup",
    "ReadsLikelihood",
    "ReadsLikelihoodBatch",
    "Rejection",
    "RenderedPrompt",
    "Role",
    "Score",
    "Span",
    "SpeedReference",
    "TaskFamily",
    "Tokenizer",
    "WorkItem",
]
