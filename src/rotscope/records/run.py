"""The summary's account of how the run ran (read mostly from the run folder's metadata): tokens,
how lengths were counted, timing, execution, the error cap, cost, the judge, the session the model
wrote, the corpus, the frozen plan and the cache checks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from rotscope.records._base import Count, OpenRecord, Record, Share


class Tokens(Record):
    """Prompt tokens: as planned and as the engine or provider evaluated them."""

    naive_prefill: Count
    """Every prompt's tokens, summed (no reuse)."""
    lower_bound: Count
    """The tokens an ideal prefix cache would evaluate in the run's order."""
    evaluated: Count | None
    """Prompt tokens evaluated, over the calls whose cached tokens are known; null when calls were
    made and none is known."""
    cached: Count | None
    """Prompt tokens read from a cache (reported in usage, or counted from the server's log), over
    the same calls; null as evaluated."""
    cached_unknown: Count | None = None
    """Calls whose cached tokens are unknown: their prompt tokens are in neither sum."""
    cached_from_log: Count | None = None
    """Calls whose cached tokens were counted from the server's log rather than reported."""


class Overhead(Record):
    """Provider-reported prompt tokens minus the local count, per call."""

    model: str | None
    """The model."""
    calls: Annotated[int, Field(ge=1)]
    """Calls with a reported count."""
    median: float
    """The median difference."""
    min: int
    """The smallest difference."""
    max: int
    """The largest difference."""


class TokenCounts(Record):
    """How lengths were counted."""

    method: Literal["exact", "approximate"]
    """``approximate`` when no tokenizer of the model was at hand."""
    tokenizer: str | None
    """The tokenizer used."""
    overhead: Overhead | None
    """The server's fixed prompt cost that rotscope's lengths do not include; null when unknown."""


class Timing(Record):
    """When the run ran and how long its calls took."""

    latency_s: float
    """The calls' summed latency, each call once."""
    started: str | None
    """When the first row was created."""
    finished: str | None
    """When the last row finished."""


class ReplicaLine(Record):
    """One server replica of a ``serve/NAME`` run, over every session of the run (start and resumes)."""

    replica: str
    """The replica's URL."""
    calls: Count
    """Calls sent to it, a call moved to it from a failing replica included."""
    failures: Count
    """Its calls that failed for a fault of the replica (each sent again to another replica)."""
    taken_out: Count
    """How many times it was taken out of the pool."""
    reason: str | None = None
    """Why it was last taken out; null when never."""
    at_call: int | None = None
    """Its calls sent by the time it was last taken out; null when never."""


class Execution(Record):
    """How the calls ran."""

    order: str | None
    """The order of the calls (prefix trie, interleaving)."""
    prefix_cache: Any = None
    """The backend's prefix-cache option, as set."""
    state_cache_mb: Any = None
    """The backend's state-cache size option, as set."""
    engine: dict[str, Any] | None = None
    """A local engine's mode, why, its settings and its worker's crashes; null for others."""
    replicas: list[ReplicaLine] | None = None
    """A run on server replicas: each replica's calls, failed calls and when it was taken out of
    the pool; null for others."""


class CellOver(Record):
    """A cell above the error cap."""

    task: str
    """The task family."""
    length: int
    """The length."""
    depth: float | str | None
    """As in cells: a layout name for cells with a layout."""
    position: str | None
    """The position as named."""
    filler: str | None = None
    """The filler type, if not static."""
    error_rate: Share
    """The cell's error rate."""


class ErrorCap(Record):
    """The run's error rate against the configured max_error_rate."""

    max_error_rate: Share
    """The cap."""
    error_rate: Share
    """Errors among attempted rows."""
    exceeded: bool
    """The rate is above the cap."""
    cells_over: list[CellOver]
    """The cells above the cap."""


class Cost(Record):
    """USD recorded in the run (cache hits cost nothing)."""

    usd: Annotated[float, Field(ge=0)]
    """The rows' calls and session_usd."""
    session_usd: Annotated[float, Field(ge=0)] | None = None
    """Of usd, what writing the model's own session cost."""
    priced: bool
    """False when some call had no price."""
    max_cost: Annotated[float, Field(gt=0)] | None
    """The run's budget."""
    cached_responses: Count
    """Replies read from the response cache."""


class Judge(Record):
    """The judge that decided some scores."""

    model: str
    """The judge's model."""
    prompt_sha256: list[Annotated[str, Field(pattern="^[0-9a-f]{64}$")]]
    """Digests of the judge prompts used."""
    verdicts: dict[str, int]
    """Rows per judge verdict."""


class SessionGeneration(Record):
    """What writing the session cost when the model under test writes the assistant's notes
    itself; read from the sessions stored in the run folder (the probe calls are not in it)."""

    calls: Count
    """Model calls that wrote a note."""
    prompt_tokens: Count
    """Prompt tokens of those calls as the backend reported them."""
    completion_tokens: Count
    """Completion tokens of those calls."""
    cached_tokens: Count
    """Prompt tokens read from a provider's prompt cache."""
    latency_s: Annotated[float, Field(ge=0)]
    """The calls' summed latency."""
    usd: Annotated[float, Field(ge=0)] | None = None
    """What the calls cost (absent in runs from before sessions were priced)."""
    priced: bool | None = None
    """Every note's call had a price."""
    sessions: Count
    """Sessions written (one per haystack variant)."""
    turns: Count
    """Turns of those sessions, notes included."""
    note_tokens: Annotated[int, Field(ge=1)]
    """filler.note_tokens: the most tokens a note may have."""
    files: list[str]
    """The stored sessions, relative to the run folder."""


class Haystack(Record):
    """One haystack variant's corpus."""

    digest: str
    """Its digest."""
    documents: Count
    """Its documents."""
    tokens: Count
    """Its tokens."""


class Corpus(OpenRecord):
    """The filler the prompts were cut from; with several variants, digest covers all of them and
    documents and tokens are their sums. Open: a family that plans its own prompts (reasoning,
    replay, coreference) records its own corpus under its task's name."""

    source: str | None = None
    """The corpus as the config names it (code:stdlib, text:GLOB, ...)."""
    digest: str | None = None
    """The corpus digest."""
    documents: Count | None = None
    """Documents."""
    tokens: Count | None = None
    """Tokens."""
    variants: Annotated[int, Field(ge=1)] | None = None
    """Haystack variants the prompts used (absent in runs from before variants)."""
    variants_asked: Annotated[int, Field(ge=1)] | None = None
    """filler.variants of the config."""
    haystacks: list[Haystack] | None = None
    """Each variant's own corpus, in variant order."""
    session: dict[str, Any] | None = None
    """Session filler: its source, digest, turns, variants, the turn kind holding the evidence and
    who wrote the assistant's notes."""


class Deviation(OpenRecord):
    """A deviation of the run from its frozen plan."""

    field: str
    """What deviates."""
    planned: Any
    """The plan's value."""
    actual: Any
    """The run's value."""


class PlanRecord(Record):
    """The frozen plan the run was checked against."""

    digest: str
    """The plan's digest."""
    deviations: list[Deviation]
    """Where the run deviates from it."""


class CacheExample(Record):
    """A call whose warm and cold replies differ."""

    call_id: str
    """The call."""
    warm_response: str | None
    """The reply with the cache warm."""
    cold_response: str | None
    """The reply with the cache cleared."""


class CacheControl(Record):
    """Warm and cold answers of the same items compared."""

    checked: Count
    """Items checked."""
    compared: Count
    """Checks without an error."""
    errors: Count | None = None
    """Checks in error."""
    differing: Count
    """Checks whose replies differ."""
    warm_correct: Annotated[float, Field(ge=0)] | None = None
    """Correct warm answers."""
    cold_correct: Annotated[float, Field(ge=0)] | None = None
    """Correct cold answers."""
    rule: str
    """What makes an incident."""
    p_value: float | None = None
    """The paired sign test's p-value (non-deterministic engines)."""
    incident: bool
    """The cache changed answers."""
    examples: list[CacheExample] | None = None
    """Up to three differing calls."""
