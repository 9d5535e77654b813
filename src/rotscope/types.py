"""The core types of rotscope: read this module first.

Data flows one way: a task family builds ``Case``s; a ``Layout`` says where each evidence
piece goes in which filler and at what length; the layout step renders a ``RenderedPrompt``
with exact token spans; a ``WorkItem`` pairs it with a model and trial; a ``Backend`` turns
its ``GenerateRequest`` into a ``Completion``; a scorer turns that into a ``Score``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

Outcome = Literal["correct", "incorrect", "abstained", "error"]
AnswerKind = str
"""A registered answer kind: the name a scorer registers under (``answer_kinds.register_scorer``,
the ``rotscope.scorers`` entry points); ``answer_kinds.check_kind`` refuses an unknown one."""


Role = Literal["answer", "support", "decoy", "superseded", "spread"]
EVIDENCE_ONLY_SUFFIX = "~evidence"
ABSENT_SUFFIX = "~absent"
EVIDENCE_ONLY_POSITION = "evidence-only"


@dataclass(frozen=True)
class Evidence:
    """A piece of text planted in the haystack, inserted byte-exact on lines of its own (or a line
    already in the corpus, see ``source``).

    ``role`` decides where it goes: the ``answer`` piece (the one that completes the answer) sits
    at the grid's depth; ``support`` pieces follow the experiment's placement rule; ``decoy``
    pieces take independent seeded depths; ``superseded`` pieces go somewhere before the answer;
    ``spread`` pieces (a task over a whole region, ``aggregation``) go evenly, in listed order,
    over the region the grid's depth names (``rotscope.prompt.placement.region``).
    """

    evidence_id: str
    text: str
    role: Role = "answer"
    depth: float | None = None
    """A depth pinned by the case itself (a copy of a reasoning task at the midpoint or the end);
    ``None`` places the piece by its role."""
    source: str | None = None
    """The corpus document (its name in the filler) that already holds ``text`` as a line: the
    layout then moves that document so the line lands at the asked depth, and inserts nothing.
    ``None``: the text is inserted."""
    turn: str | None = None
    """In session filler, the kind of turn the piece goes in (``user`` for an instruction the user
    gave); ``None``: the filler's ``turn``. Static filler ignores it."""


@dataclass(frozen=True)
class Claims:
    """Claim-level checks of a user case (``tasks: [cases]``): each claim is a claim id with the
    surface strings that state it. ``cite`` maps each required claim to the evidence ids that
    support it when the case asks for citations (``None`` when it does not)."""

    required: tuple[tuple[str, tuple[str, ...]], ...] = ()
    forbidden: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cite: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    evidence_ids: tuple[str, ...] = ()
    distractors: tuple[tuple[str, str], ...] = ()
    """(evidence id, text) of the pieces that cannot establish the answer."""


@dataclass(frozen=True)
class Oracle:
    """What counts as a right answer. ``abstain`` means the right answer is 'not in the context'."""

    answer: str
    aliases: tuple[str, ...] = ()
    abstain: bool = False
    traps: tuple[tuple[str, str], ...] = ()
    """(category, value) pairs: a wrong answer naming ``value`` is scored with that failure category
    (a decoy, the anchor alone, a superseded value, the unfiltered maximum). In a ``set`` answer a
    pair whose value is one of ``items`` names the category of a reply that misses that item alone
    (a chain's last hop)."""
    claims: Claims | None = None
    """Claim checks replace answer matching when set."""
    kind: AnswerKind = "phrase"
    """``phrase``: the answer is found anywhere in the reply. ``number`` and ``choice``: the reply must
    end with ``Answer: <number>`` or ``Answer: <letter>`` (the prompt asks for that format). ``set``:
    every string of ``items`` must be in the reply (RULER's ``string_match_all``). ``instruction``:
    the reply must comply with the rule ``answer`` names (``scoring.instruction``), in controls
    too, where compliance is accidental. ``reply``: the reply must be ``items[0]`` (a code to
    prefix) followed by ``answer``, an earlier turn's whole text (``scoring.reply``, MRCR's task)."""
    items: tuple[str, ...] = ()
    """The strings a ``set`` answer must all name, in the order that gives them meaning (a chain's
    hops); ``answer`` is their display form."""

    def accepted(self) -> tuple[str, ...]:
        return (self.answer, *self.aliases)


@dataclass(frozen=True)
class Case:
    """One task instance: evidence to plant, a question about it, and its oracle.

    ``control`` marks a control of a case: the evidence-absent one (same layout, no evidence,
    the right answer is an explicit abstention) or, with ``evidence_only``, the case's evidence
    with no padding at all (a case failing there is a capability failure, not a positional one).
    """

    case_id: str
    task: str
    evidence: tuple[Evidence, ...]
    question: str
    oracle: Oracle
    control: bool = False
    guarded: tuple[str, ...] = ()
    """Strings (entity names, planted values) that filler must never contain: a competing value
    outside the declared evidence would make the probe ambiguous."""
    parts: tuple[tuple[str, Case], ...] = ()
    """For a multi-question prompt: (label, case) per question, in the order asked. Each part is
    scored on its own; the bundle's ``question`` is the list of labelled questions."""
    grouped: bool = False
    """All evidence goes as one block at the grid's depth in listed order (a retrieved context):
    only padding moves between layouts, so evidence order is checked across them."""
    slices: tuple[tuple[str, str], ...] = ()
    """(field, value) pairs carried into every row, so results can be sliced by them."""
    evidence_only: bool = False
    at_depth: tuple[float, str | None] | None = None
    """A question of a prompt whose questions sit at depths of their own (``multikey``): the grid
    depth (and its name) its evidence is pinned at, where its rows are counted; ``None``: the
    layout's depth."""

    @property
    def own_depths(self) -> bool:
        """Every question's evidence sits at its own pinned depth: the prompt has one layout per
        length, and each question is reported at its own depth."""
        return bool(self.parts) and all(part.at_depth is not None for _, part in self.parts)

    pins: tuple[tuple[int, float | str], ...] = ()
    """(length in tokens, position) layouts the case is pinned to: it runs there and only there,
    not on the experiment's grid (a failure re-run where it happened). A position is written as in
    ``depths``: a fraction, a name or ``@N``. ``()``: the grid's layouts."""

    def absent_control(self) -> Case:
        """The case without its evidence. A reply is checked as the case's own when the oracle
        is a rule to follow (``instruction``): compliance there is the base rate by chance."""
        keeps_oracle = self.oracle.kind == "instruction"
        return Case(
            case_id=f"{self.case_id}{ABSENT_SUFFIX}",
            task=self.task,
            evidence=(),
            question=self.question,
            oracle=self.oracle if keeps_oracle else Oracle(answer="", abstain=True),
            control=True,
            guarded=self.guarded,
            parts=tuple((label, part.absent_control()) for label, part in self.parts),
            slices=self.slices,
            pins=self.pins,
        )

    def evidence_only_control(self) -> Case:
        """The case with its evidence and no padding, scored as the case itself is. Evidence that
        lives in a corpus document is given as its line alone, like inserted evidence."""
        return replace(
            self,
            case_id=f"{self.case_id}{EVIDENCE_ONLY_SUFFIX}",
            evidence=tuple(replace(evidence, source=None) for evidence in self.evidence),
            control=True,
            evidence_only=True,
            parts=tuple((label, part.evidence_only_control()) for label, part in self.parts),
        )

    def scored_parts(self) -> tuple[tuple[str, Case], ...]:
        """The (label, case) pairs that get a row and a score: the parts, or the case itself."""
        return self.parts or (("", self),)


@dataclass(frozen=True)
class Layout:
    """Where a case goes: the whole prompt's target length in model tokens and the evidence depth.

    ``depth`` is the fraction of filler tokens that precede the evidence (0 = first, 1 = last);
    ``position`` is its name when one was asked for (``midpoint``), else ``None``.
    """

    length_tokens: int
    depth: float
    position: str | None = None
    filler: str | None = None
    """The case's own filler stream (a reasoning family's ``with_solutions``, ``questions_only`` or
    ``neutral``); ``None`` for the experiment's corpus."""


@dataclass(frozen=True)
class Span:
    """Exact placement of one evidence piece in the final prompt's token ids, ``[start, end)``."""

    evidence_id: str
    token_start: int
    token_end: int
    depth: float


@dataclass(frozen=True)
class RenderedPrompt:
    """The final prompt as the model will see it: chat messages, full text and token ids."""

    messages: tuple[dict[str, str], ...]
    text: str
    token_ids: tuple[int, ...]
    spans: tuple[Span, ...]
    haystack_tokens: int
    corpus_digest: str
    context_start: int = 0
    """Token index where the haystack (filler and evidence) begins; what precedes it is template
    and header, what follows the haystack is the question footer and template suffix."""
    tokenizer_digest: str = ""
    """The tokenizer the spans were computed with: spans are never reused under another one."""
    filler_chars: tuple[tuple[int, int], ...] = ()
    """Character ranges ``[start, end)`` of the last message's content that are filler: the haystack
    without its evidence pieces, and none of the header, question, instructions or template."""

    @property
    def prompt_tokens(self) -> int:
        return len(self.token_ids)

    def filler_text(self) -> str:
        """The filler alone, its pieces (cut apart by evidence) one per line; what a wrong answer is
        traced to (``context_value``, ``filler_number``). Empty for a prompt without filler."""
        content = self.messages[-1]["content"] if self.messages else ""
        return "\n".join(content[start:end] for start, end in self.filler_chars)


@dataclass(frozen=True)
class GenerationParams:
    temperature: float = 0.0
    max_tokens: int = 32
    seed: int = 0


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
class ClaimReport:
    """What a claim-checked answer got wrong, by claim and evidence id (stored with its row)."""

    missing: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    cited: tuple[str, ...] = ()
    wrong_citations: tuple[str, ...] = ()
    missing_citations: tuple[str, ...] = ()
    partial: dict[str, float] = field(default_factory=dict)
    """Partial credit by measure name, as the scorer of the answer kind registered them
    (``register_scorer(measures=...)``): a ``set`` answer's ``recall`` (the share of its expected
    strings the reply names), a ``reply`` answer's ``similarity`` (MRCR's ratio of the reply, its
    prefix removed, to the expected turn). Rows stored before it carry the measure as a field of
    the report itself (``"recall": 0.5``), and read the same (``rows.partial_credit``)."""

    @property
    def recall(self) -> float | None:
        return self.partial.get("recall")

    @property
    def similarity(self) -> float | None:
        return self.partial.get("similarity")


@dataclass(frozen=True)
class Score:
    outcome: Outcome
    category: str | None = None
    claims: ClaimReport | None = None


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

    def request(self) -> GenerateRequest:
        """What the backend receives for this item: the verified messages and ids, its decoding."""
        return GenerateRequest(self.prompt.messages, self.prompt.token_ids, self.params, self.prefix_group)


@runtime_checkable
class Tokenizer(Protocol):
    """A model's own tokenizer. Ids round-trip through ``piece`` as raw bytes."""

    name: str

    def encode(self, text: str, *, special: bool = False) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def piece(self, token_id: int) -> bytes:
        """The exact bytes one token contributes to the decoded text."""
        ...

    def count(self, text: str) -> int: ...

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """The model's chat template applied to ``messages``, generation prompt included."""
        ...

    def digest(self) -> str:
        """Identifies vocabulary and chat template, so results on another tokenizer never mix."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What a backend is, so the executor and checks ask it rather than a list of names."""

    local: bool = False
    """Runs on this machine: calls go one at a time in prefix order, never through the response
    cache, at no cost; cache controls may compare warm and cold answers."""
    exact_ids: bool = False
    """The model receives the verified token ids themselves, so the prompt-token count it reports
    must equal them exactly (else the delivery check allows the slack of a re-tokenizing API)."""
    max_concurrency: int | None = None
    """Calls at once; ``None``: the provider's configured limits decide."""
    batching: bool = False
    """Takes many requests at once and schedules them itself (an engine like vLLM)."""
    clearable_cache: bool = False
    """Its KV cache can be cleared between calls (cache controls need it)."""
    worker_process: bool = False
    """Can be sent to an engine worker process (pickled without its loaded engine)."""
    harness_prompt: bool = False
    """A harness between rotscope and the model adds a prompt of its own (an agent CLI's system
    prompt and tool definitions): a reported prompt count above the ids sent is that harness
    overhead, measured and shown, not a prompt extended on its way; a count below is still a cut."""


class Backend(Protocol):
    """A model endpoint. ``generate`` never raises for model or network faults: it returns
    a ``Completion`` whose ``error`` is set, so the failure is recorded, never scored."""

    model_id: str
    context_window: int
    capabilities: Capabilities

    def tokenizer(self) -> Tokenizer: ...

    def reserve(self, max_prompt_tokens: int, max_new_tokens: int) -> None:
        """Prepare for prompts up to this size before the first call (a local engine's context)."""
        ...

    async def generate(self, request: GenerateRequest) -> Completion: ...

    def describe(self) -> dict[str, Any]:
        """Name, arguments and digests that identify this model, stored with every run."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class BatchingBackend(Backend, Protocol):
    """A backend that takes many requests at once and schedules them itself (``Capabilities.batching``:
    vLLM). The executor hands it up to ``batch_size`` consecutive items of the run's order."""

    batch_size: int

    async def generate_batch(self, requests: Sequence[GenerateRequest]) -> Sequence[Completion]:
        """One completion per request, in the order given. A fault of one request is its own error
        completion; an exception fails the whole batch (each request becomes an error row)."""
        ...


class TaskFamily(Protocol):
    @property
    def name(self) -> str: ...

    def cases(self) -> Iterable[Case]: ...


@dataclass(frozen=True)
class Rejection:
    """A prompt the verifier rejected (never sent) and the cell each of its questions would have
    counted in, so a comparison across lengths can show what is missing where."""

    task: str
    case_ids: tuple[str, ...]
    """The scored case of each question of the prompt (one for a single-question prompt)."""
    control: bool
    length: int
    depth: float | None
    """``None`` where the layout never got a depth (an offset a length cannot hold)."""
    position: str | None
    filler: str | None
    reason: str

    @classmethod
    def of(cls, case: Case, layout: Layout | None, reason: str, *, length: int | None = None,
           position: str | None = None) -> Rejection:  # fmt: skip
        return cls(
            task=case.task,
            case_ids=tuple(part.case_id for _, part in case.scored_parts()),
            control=case.control,
            length=layout.length_tokens if layout is not None else int(length or 0),
            depth=layout.depth if layout is not None else None,
            position=layout.position if layout is not None else position,
            filler=layout.filler if layout is not None else None,
            reason=reason,
        )


@dataclass(frozen=True)
class FamilyPrompts:
    """Prompts a family rendered itself, from its own filler and layouts, verified like any."""

    rendered: tuple[tuple[Case, Layout, RenderedPrompt], ...]
    rejected: tuple[Rejection, ...]
    corpus: dict[str, Any]
    """What the run's metadata records of the family's filler (its source and digest)."""
    corpus_label: str
    """The run's filler source when the family is the only one that uses filler."""


@runtime_checkable
class PlansOwnPrompts(Protocol):
    """A family that plans its own prompts (the reasoning family: items inside other items) instead
    of handing cases to the planner's layouts."""

    def plan_prompts(self, tokenizer: Tokenizer, neutral_corpus: Callable[[], Any]) -> FamilyPrompts:
        """Every prompt of the family; ``neutral_corpus`` gives the experiment's own filler."""
        ...
