"""One model call: the ``WorkItem`` (a rendered prompt, a model, a trial), the ``GenerateRequest``
a backend receives (with its decoding ``GenerationParams`` and remote ``PrefixGroup``) and the
``Completion`` it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from rotscope.types.case import Case
from rotscope.types.rendering import Layout, RenderedPrompt

DEFAULT_MAX_TOKENS = 32
"""The reply budget of an answer kind that sizes none, and of every reply before budgets were sized
per answer kind (``generation.max_tokens`` unset: ``answer_kinds.reply_budget``)."""


@dataclass(frozen=True)
class GenerationParams:
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    """The reply budget of this call: ``generation.max_tokens``, else its answer kind's."""
    seed: int = 0


@dataclass(frozen=True)
class AnswerStop:
    """Where a reply's answer is complete, as its answer kind declares it: decoding stops there
    (``generation.stop: answer``; the rules are ``rotscope.answer_stop``). Not part of a call's
    identity (``item_id``): it ends a reply after its answer, and the answer is what is scored."""

    strings: tuple[str, ...] = ()
    """Stop sequences: the reply ends just before the first of them (what an API's ``stop`` does)."""
    answer_line: str | None = None
    """``digits`` (a number) or ``label`` (an option's letter or digit): the reply ends with the line
    break after the first ``Answer:`` line that holds such a value. No stop sequence says this, so
    only engines that read the text as they decode apply it (llama.cpp in process, transformers); a
    served model decodes on."""


@dataclass(frozen=True)
class PrefixGroup:
    """The prefix group of a remote call (see ``rotscope.plan.schedule``) and the prefixes it shares
    with its neighbours: what a provider's prompt cache can be told. It never changes an answer, so
    it is no part of a call's identity.

    Three prefixes matter for Anthropic's breakpoints: the stem every prompt of the run shares, and
    the prefixes this call shares with the calls just before and after it in its group's trie order
    (the order the group runs in): the first of two neighbours to run writes the prefix they share,
    the second reads it. A ``*_chars`` count is the characters of the last message's content the
    prefix covers, cut back to the start of a run of whitespace so a breakpoint falls between words
    (the messages before it are the same in both calls), 0 where it ends before the last message
    or there is no such neighbour."""

    key: str
    """Names the group (a hash of its shared prefix): OpenAI's ``prompt_cache_key``."""
    calls: int
    shared_tokens: int
    """Prompt tokens every call of the group shares, counted by the run's tokenizer."""
    stem_tokens: int = 0
    stem_chars: int = 0
    previous_tokens: int = 0
    """Prompt tokens this call shares with the one before it in the group (0: it is the first)."""
    previous_chars: int = 0
    next_tokens: int = 0
    """Prompt tokens this call shares with the one after it in the group (0: it is the last)."""
    next_chars: int = 0


@dataclass(frozen=True)
class GenerateRequest:
    """What a backend receives. Backends never see the oracle."""

    messages: tuple[dict[str, str], ...]
    token_ids: tuple[int, ...]
    params: GenerationParams
    prefix_group: PrefixGroup | None = None
    stop: AnswerStop | None = None
    """Where the answer is complete (``None``: decode to ``max_tokens`` or the end of the reply)."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = 0
    """Prompt tokens read from the provider's prompt cache (counted in ``prompt_tokens``); ``None``
    where they are unknown (a server whose usage reports none, with no log to count them from)."""
    cached_source: str = "reported"
    """Where ``cached_tokens`` came from: ``reported`` (the provider's or engine's usage) or
    ``server_log`` (counted from the server's own log, ``remote.server_log``)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache (Anthropic bills them above the input
    price; counted in ``prompt_tokens``)."""
    latency_s: float = 0.0
    error: str | None = None
    attempts: int = 1
    """Requests sent for this completion, retries included."""
    engine_mode: str | None = None
    """The local engine's mode that produced it (``extra_buffers=off``); ``None`` for engines with
    one mode and remote APIs. A run's rows come from one mode."""
    cost: float | None = None
    """USD the backend itself reported for the call (an agent CLI's own count); ``None``: the call
    is priced from the price table."""


@dataclass(frozen=True)
class LikelihoodRequest:
    """What a backend that reads likelihoods receives (``ReadsLikelihood``): the verified prompt
    ids and the token ids of each answer form to read after them, teacher-forced. Backends never
    see the oracle: the forms come tokenized by the model's own tokenizer."""

    token_ids: tuple[int, ...]
    continuations: tuple[tuple[int, ...], ...]
    messages: tuple[dict[str, str], ...] = ()
    scored_from: tuple[int, ...] = ()
    """Per continuation, how many of its first tokens are a lead-in, teacher-forced but not the
    answer (``Case.answer_readings``); the caller sums the rest. Empty: every token is scored."""
    """The verified messages, for a server that takes text and must be checked to see the ids."""


@dataclass(frozen=True)
class Likelihood:
    """Per answer form (in the request's order), the natural log-probability of each of its tokens
    given the prompt and the tokens before it; ``error`` set on a model or engine fault (an error
    row, never scored)."""

    token_logprobs: tuple[tuple[float, ...], ...] = ()
    prompt_tokens: int = 0
    """Prompt tokens the engine evaluated for the reading (reused prefix included)."""
    cached_tokens: int | None = None
    """Of them, the prompt tokens the engine's cache already held (``None``: not known)."""
    latency_s: float = 0.0
    error: str | None = None
    scored_from: tuple[int, ...] = ()
    """The request's lead-in lengths, set by the caller (``LikelihoodRequest.scored_from``)."""


@dataclass(frozen=True)
class WorkItem:
    """One model call. ``item_id`` hashes everything that determines the result."""

    item_id: str
    case: Case
    layout: Layout
    model: str
    trial: int
    prompt: RenderedPrompt
    params: GenerationParams
    instance_id: str = field(default="")
    haystack_variant: int | None = None
    """The haystack variant the prompt's filler comes from (case ``i`` of a family in variant
    ``i mod variants``); ``None`` for a family that plans its own prompts. Not part of ``item_id``."""
    prefix_group: PrefixGroup | None = None
    """Set by the execution order of a remote run; not part of ``item_id``."""
    fault: str | None = None
    """The assembly faults injected into the prompt (``run --inject``), as labels joined by commas;
    ``None``: the prompt as rendered. Part of ``item_id``."""
    evidence_lost: tuple[str, ...] = ()
    """The evidence pieces a fault removed from the prompt (they have no span)."""
    stop: AnswerStop | None = None
    """Where decoding stops: the case's answer kind's rule under ``generation.stop: answer``; not part
    of ``item_id``."""

    def request(self) -> GenerateRequest:
        """What the backend receives for this item: the verified messages and ids, its decoding."""
        return GenerateRequest(
            self.prompt.messages, self.prompt.token_ids, self.params, self.prefix_group, self.stop
        )
