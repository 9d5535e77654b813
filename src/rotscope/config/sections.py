"""The sections of the experiment file that are run policy (filler, placement, generation, gate,
analysis, limits, prices, cache, judge, search, executor, subjects), and the field types every
section shares (``Int``, ``Float``, ``Depth``...): one pydantic model per section, each a
``StrictOptions`` (``rotscope.config.spec``, re-exported here): unknown keys an error, numbers never
taken from YAML booleans. ``rotscope.config.experiment`` assembles them into the experiment. A
component's own section (``llamacpp``, ``remote``, ``reasoning``...) lives with the component and
is registered through the ``rotscope.sections`` entry points."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from rotscope._util.decode import check_encoding
from rotscope.config.options import PathOption, SectionOf
from rotscope.config.spec import SectionSpec as SectionSpec
from rotscope.config.spec import StrictOptions as StrictOptions
from rotscope.types import DEFAULT_MAX_TOKENS


def _not_a_boolean(value: object) -> object:
    """YAML reads ``true``/``yes``/``on`` as booleans, which pydantic would take as 1: where a number
    is meant, a boolean is surely a mistake."""
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a boolean, not a number")
    return value


Int = Annotated[int, BeforeValidator(_not_a_boolean)]
Float = Annotated[float, BeforeValidator(_not_a_boolean)]
OptionalInt = Annotated[int | None, BeforeValidator(_not_a_boolean)]
OptionalFloat = Annotated[float | None, BeforeValidator(_not_a_boolean)]


def _depth(value: object) -> object:
    if not isinstance(_not_a_boolean(value), int | float | str):
        raise ValueError(f"{value!r} is not a depth: a fraction in [0, 1], a position name or @N")
    return value


Depth = Annotated[float | str, BeforeValidator(_depth)]


_FILLER_CONTENT = PathOption(by_content="filler.digest")
"""A filler file: the manifest's ``filler.digest`` (the haystack's bytes) covers its content."""


class FillerConfig(StrictOptions):
    """Where haystack text comes from.

    ``code``: the source files of an installed package (``package``) or a directory (``path``);
    with neither, the Python standard library. ``text``: files matching ``glob``, or one
    ``field`` of each line of a ``jsonl`` file. ``readinglog``: generated service documents.
    """

    kind: str = "code"
    """The registered filler source: ``code``, ``text``, ``readinglog``, or one an outside package
    registers (``rotscope.filler.register_filler``)."""
    package: str | None = None
    """``code`` filler: the installed Python package whose source files are read."""
    path: Annotated[str | None, _FILLER_CONTENT] = None
    """``code`` filler: a directory whose source files are read; relative to the experiment file."""
    glob: Annotated[str | None, _FILLER_CONTENT] = None
    """``text`` filler: a glob pattern of text files, read in sorted order; relative to the
    experiment file."""
    jsonl: Annotated[str | None, _FILLER_CONTENT] = None
    """``text`` filler: a JSON Lines file, one document a line; relative to the experiment file."""
    field: str = "text"
    """``text`` filler from ``jsonl``: the key of each line that holds the document's text."""
    encoding: str = "utf-8"
    """How the filler's files are decoded (``path``, ``glob``, ``jsonl``): any Python codec name
    (``utf-8``, ``latin-1``, ``cp1252``...). Decoding is strict: a byte that is not valid in this
    encoding stops the run naming the file and the byte's offset, never a silent replacement."""
    order: Literal["seeded", "tree"] = "seeded"
    """``code`` filler: the order its files are read in. ``seeded`` (the default): shuffled by the
    run's seed (each haystack variant by its own). ``tree``: the tree's own order, the files' paths
    relative to the root sorted as text (``core.py`` before ``djangocache.py`` before
    ``fanout.py``), the same for every seed; a file that holds evidence of a ``codebase`` case is
    taken out and set between the files before it (at least the longest length's tokens of them,
    from the first file on) and those after, so its neighbours in every prompt are known
    (examples/perturbed-django.yaml plants fake needles there). With ``variants: N`` the tree is
    read in N rotations (at most its number of files besides the evidence's): rotation ``k`` starts
    at the ``k``-th file, wrapping round, and sets each evidence file ``k`` files further along
    than its own place, and every ``codebase`` question is asked once in each rotation (case
    ``ID@k``, variant ``k``), so the questions are N times as many instances clustered on the N
    rotations; unset or 1, one haystack as before."""
    allow_repeat: bool = False
    """Read the source again from its first document when it runs out before the longest
    haystack is filled (by default that is an error naming the shortfall)."""
    variants: OptionalInt = Field(default=None, gt=0)
    """How many different haystacks each length draws from; unset (``null``, the default): one per
    case. Variant 0 reads the source's documents in the order of the run's seed (the one haystack of
    runs before variants), each further one in the order of a seed derived from it, starting at a
    document no other variant starts at. Case ``i`` of each family (and its controls) uses variant
    ``i mod variants`` at every length, so results do not speak for one filler text only. One per
    case keeps the cases independent, so the bracket clusters on the cases and can place a length
    at the size people run (docs/statistics.md, "The bracket"); prefix reuse then stays within a
    case's lengths and depths, which costs evaluated tokens: examples/quick-v1.yaml at 16 cases per
    task evaluates at least 91,743 prompt tokens with one per case, 79,088 with 3 and 76,925 with 1
    (229,369 sent; benchmarks/results/bracket_coverage.md). Fewer variants than cases make the cases
    that share a text one cluster: with 3, a model right on every item is not shown to pass a length
    below 34 cases. Session filler written by the model (``assistant: model``) writes one session
    per variant. Configs and frozen plans written when the default was 3 keep 3: a run folder's
    config and a plan's manifest hold the value, and a config without ``variants`` run under such a
    plan (``--plan``) takes the plan's. A corpus with fewer documents than asked gives fewer; the
    summary's ``corpus.variants`` states the number used. A search (``run --search``) left without
    ``variants`` gives each instance a haystack of its own."""
    source: Annotated[str | None, PathOption(keep=("generated",), by_content="filler.digest")] = None
    """``session`` filler: ``generated`` (a seeded, invented coding-agent session; the default) or
    the path of a transcript, JSON Lines of OpenAI-style messages (``role``, ``content``, an
    assistant's ``tool_calls``), one message a line."""
    assistant: Literal["generated", "model"] = "generated"
    """``session`` filler from the generator: who writes the assistant's own words (its notes between
    steps, its plans and their abandonment; tool calls and tool output stay generated).
    ``generated``: invented text. ``model``: the model under test, called on the session so far
    (its decoding: ``generation``'s temperature and seed, at most ``note_tokens`` a note), so the
    session it is probed in holds its own earlier words. The session is written before the prompts
    are planned, stored in the run folder as it grows (``session/DIGEST.jsonl``, a transcript) and
    replayed from there by ``--resume``; its calls and tokens are the summary's
    ``session_generation``."""
    note_tokens: Int = Field(default=64, gt=0)
    """``assistant: model``: the most tokens the model may write per note."""
    turn: Literal["tool", "user", "assistant"] = "tool"
    """``session`` filler: the kind of turn evidence goes in (a family may ask for its own: an
    instruction goes in a user turn)."""
    static: FillerConfig | None = None
    """``session`` filler: a static filler run on the same cases and layouts, so the summary's
    ``filler_gap`` pairs the session against it on cases (same probe, equal token length)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Settings of a source registered by an outside package, which validates them itself."""

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, encoding: str) -> str:
        return check_encoding(encoding)

    @model_validator(mode="after")
    def _session_keys(self) -> FillerConfig:
        if self.order != "seeded" and self.kind != "code":
            raise ValueError(f"order: {self.order} is a setting of code filler (kind: code)")
        if self.kind != "session" and (self.source is not None or self.static is not None):
            raise ValueError("source and static are settings of session filler (kind: session)")
        if self.assistant == "model" and (self.kind != "session" or self.source not in (None, "generated")):
            raise ValueError("assistant: model writes the notes of a generated session (source: generated)")
        if self.static is not None and self.static.kind == "session":
            raise ValueError("static: the filler compared with a session must be a static one")
        return self

    @model_serializer(mode="wrap")
    def _without_seeded_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``order`` left out at its default (``seeded``), so an experiment that does not ask for the
        tree's order keeps the identity, plan and config digest of runs from before the key."""
        dumped: dict[str, Any] = handler(self)
        if dumped.get("order") == "seeded":
            dumped.pop("order", None)
        return dumped


def _separation(value: object) -> int | float:
    """One entry of ``placement.separations``: a token count (an int >= 1) or a share of the
    haystack (a float strictly between 0 and 1), nothing else (no boolean, no string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is neither a token count (an int >= 1) nor a share in (0, 1)")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"{value} tokens: a token count is an int >= 1")
        return value
    if not 0.0 < value < 1.0:
        raise ValueError(f"{value}: a share of the haystack is a float in (0, 1); a token count is an int")
    return value


def _separations(values: object) -> list[int | float]:
    if not isinstance(values, list | tuple):
        raise ValueError("separations is a list: token counts (ints >= 1) or shares in (0, 1)")
    checked = [_separation(value) for value in values]
    seen: set[tuple[type, float]] = set()
    for value in checked:
        if (type(value), value) in seen:
            raise ValueError(f"separation {value} is listed twice")
        seen.add((type(value), value))
    return checked


class PlacementConfig(StrictOptions):
    """Where evidence other than the answer piece goes, relative to the grid's depth ``d``.

    ``support``: ``before`` puts the i-th support piece counted back from the answer at
    ``d - i * distance``; ``opposite`` puts them in the other half (``d + 0.5`` or ``d - 0.5``);
    ``depths`` takes ``support_depths`` in order. Decoys get independent seeded depths at least
    ``decoy_min_gap`` apart; superseded pieces a seeded depth before the answer.
    """

    support: Literal["before", "opposite", "depths"] = "before"
    """Where support pieces go: ``before`` the answer, in the ``opposite`` half, or at
    ``support_depths``."""
    distance: Float = Field(default=0.3, ge=0.0, le=1.0)
    """``before``: the gap between consecutive support pieces, as a fraction of the haystack."""
    support_depths: list[Float] = Field(default_factory=list)
    """``depths``: the fractional depths of the support pieces, in order."""
    decoy_min_gap: Float = Field(default=0.1, ge=0.0, le=0.5)
    """The least distance between two decoys' depths, as a fraction of the haystack."""
    separations: Annotated[list[int | float], BeforeValidator(_separations)] = Field(default_factory=list)
    """A grid axis, like depths and lengths: the distance between the facts a case must combine
    (its ``support`` pieces and its ``answer``; the ``latent``, ``join`` and ``multihop`` families,
    or a case file's cases with support pieces), each entry a count of filler tokens (an int >= 1,
    ``512``) or a share of the haystack's filler (a float in (0, 1), ``0.25``). Every (length,
    depth, separation) is a condition. The facts go in listed order, each the separation's filler
    tokens after the one before, and the grid's depth places the group as a whole: the share of
    the filler outside the group that precedes it (0: the group opens the haystack, 1: it closes
    it); a superseded piece goes before the group. A separation a length cannot hold is an
    unplaceable layout, counted and named. Empty (the default): one per-run ``distance``."""

    @field_validator("support_depths")
    @classmethod
    def _fractions(cls, depths: list[float]) -> list[float]:
        for depth in depths:
            if not 0.0 <= depth <= 1.0:
                raise ValueError(f"depth {depth} is outside [0, 1]")
        return depths

    @model_validator(mode="after")
    def _separations_place_support(self) -> PlacementConfig:
        if self.separations and self.support != "before":
            raise ValueError(
                f"separations place the support pieces themselves; support: {self.support} cannot be "
                "combined with them (leave support at before)"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_empty_separations(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Left out when empty, so an experiment without the axis keeps the identity, plan and
        config of runs from before it existed."""
        dumped: dict[str, Any] = handler(self)
        if not dumped.get("separations"):
            dumped.pop("separations", None)
        return dumped


def as_before_decoding_keys(fields: dict[str, Any]) -> dict[str, Any]:
    """A config dump's fields as the config digest and a frozen plan's ``config`` group read them:
    ``generation.stop`` left out at today's default (``answer``: an early stop ends a reply only
    after its answer, so it changes no outcome), and an unset ``generation.max_tokens`` (each
    reply's budget its answer kind's) written as the one budget every reply had before
    (``DEFAULT_MAX_TOKENS``), so a config that leaves both unset keeps its digest. What a run sends
    is pinned where it is sent: each work item's id hashes its budget, and the manifest's
    ``decoding`` group names the budgets per answer kind where they differ from that one. A run
    folder's identity names both as set (``execution.state.identity.identity_fields``)."""
    generation = fields.get("generation")
    if not isinstance(generation, dict):
        return fields
    written = {key: value for key, value in generation.items() if key != "stop" or value != "answer"}
    if "max_tokens" in written and written["max_tokens"] is None:
        written["max_tokens"] = DEFAULT_MAX_TOKENS
    return {**fields, "generation": written}


class GenerationConfig(StrictOptions):
    """How replies are decoded: the same settings for every call of the run."""

    temperature: Float = Field(default=0.0, ge=0.0)
    """Sampling temperature; 0 decodes greedily."""
    max_tokens: OptionalInt = Field(default=None, gt=0)
    """The most tokens a reply may have. Unset: each reply's budget is its answer kind's, room for
    the answer the kind asks and no more: 32 for a ``phrase``, 96 for a ``set``, 256 for a
    ``number`` or ``choice`` (a worked solution before its ``Answer:`` line), 32 for a kind that
    sizes none (``reply``, ``instruction``), summed over the questions of a prompt that asks several;
    the dry run's cost and time estimates use the same budgets. Set, every reply has this budget. A
    run under a plan frozen when every reply had 32 (its ``decoding`` names no ``reply_budgets``)
    keeps 32 where this is unset."""
    seed: Int = 0
    """The decoding seed of trial 0 (trial ``t`` uses ``seed + t``), for engines that take one."""
    stop: Literal["answer", "end"] = "answer"
    """``answer``: decoding stops as soon as the reply's answer is complete, as its answer kind
    says: a ``phrase`` or ``set`` reply at its first sentence that ends a line (``.`` then a line
    break, left out of the reply as a server's ``stop`` leaves it out; sent as the API's stop
    sequences to OpenAI-compatible servers, vLLM, Anthropic and Gemini), a ``number`` or ``choice``
    reply after its first ``Answer:`` line that holds a value (engines that read the text as they
    decode: llama.cpp in process, transformers; a served model decodes on); ``reply`` and
    ``instruction`` replies, and a prompt of several questions, run to their end. ``end``: every
    reply runs to its end or ``max_tokens``. Not part of the item ids; a run records it in its
    config, and ``--resume`` keeps it."""


class ExecutorConfig(StrictOptions):
    """Where calls run. ``auto``: a local engine in a worker process of its own (a native crash is an
    error row and a restart, not the end of the run), remote APIs on the run's event loop;
    ``inprocess``: the engine in the run's own process; ``ray``: a local engine on ``workers`` Ray
    actors (``pip install rotscope[ray]``), each owning a replica of the engine and running whole
    prefix groups of the trie, so each replica reuses its own KV cache. This process still plans,
    verifies, scores and is the only writer of the run store; a lost worker's call is an error row
    (``--resume`` runs it again) and a fresh worker takes over the rest of its calls."""

    kind: Literal["auto", "inprocess", "ray"] = "auto"
    """``auto``, ``inprocess`` or ``ray`` (see the section's description)."""
    max_crashes: Int = Field(default=3, gt=0)
    """Engine crashes (or lost Ray workers, per worker) in a row after which the run stops (exit 5;
    ``--resume`` goes on)."""
    address: str | None = None
    """``ray`` only: ``null`` starts Ray on this machine for the run (no dashboard, no usage stats),
    or joins the one this process already started; ``auto`` joins a running cluster; a URL
    (``ray://HOST:PORT`` or ``HOST:PORT``) joins that cluster."""
    workers: Int = Field(default=2, gt=0)
    """``ray`` only: engine replicas (Ray actors), one CPU each. On one machine give each replica its
    share of the cores with ``llamacpp.n_threads``."""
    gpus_per_worker: Float = Field(default=0.0, ge=0.0)
    """``ray`` only: GPUs each replica reserves (fractions share a GPU)."""

    @field_validator("address")
    @classmethod
    def _ray_address(cls, address: str | None) -> str | None:
        if address is None or address == "auto":
            return address
        if not re.fullmatch(r"(ray://)?[A-Za-z0-9._\[\]:-]+:[0-9]+", address):
            raise ValueError(f"{address!r} is not a Ray address: null, auto, ray://HOST:PORT or HOST:PORT")
        return address


class GateConfig(StrictOptions):
    """The pre-registered analysis of a release gate (frozen by ``rotscope plan``).

    The primary metric is instance-level accuracy, candidate minus baseline, paired item by item and
    averaged per instance (``interval``: the adjusted t of the paired gaps). Four tests, each
    one-sided at ``alpha``: pooled non-inferiority over all slices (each case counted once), a
    pooled FAIL test, per-slice FAIL tests and the absolute floor, the last two Holm-adjusted across
    slices. FAIL when a FAIL test rejects; PASS when every slice has ``min_instances``, none FAILs,
    the floor holds and the pooled lower bound is above ``-margin``; else INCONCLUSIVE. Error rows
    are excluded and counted; more than ``max_error_rate`` of either run's rows in error makes the
    verdict INCONCLUSIVE.
    """

    primary_metric: Literal["accuracy"] = "accuracy"
    """The gate's metric: instance-level accuracy (the only one)."""
    interval: Literal["adjusted-t", "cluster-bootstrap-percentile"] = "adjusted-t"
    """``cluster-bootstrap-percentile`` is read from plans frozen by earlier versions, whose gate
    bootstrapped each slice: such a gate is judged with the adjusted t, and its record says so."""
    resamples: Int = Field(default=4000, ge=100)
    """Read from earlier plans (their bootstrap draws); the adjusted t draws nothing."""
    bootstrap_seed: Int = 0
    """Read from earlier plans; unused."""
    alpha: Float = Field(default=0.05, gt=0.0, lt=0.5)
    """One-sided level of each test (pooled non-inferiority, pooled FAIL; Holm's family level for
    the slice FAIL tests and the floor)."""
    multiple_comparisons: Literal["holm"] = "holm"
    """How the slice tests are adjusted: Holm's step-down (the only one)."""
    margin: Float = Field(default=0.05, ge=0.0, lt=1.0)
    """Non-inferiority margin: the gate passes when candidate minus baseline, pooled, is shown above
    -margin, and fails when it (pooled, or in one slice) is shown below."""
    floor: Float = Field(default=0.0, ge=0.0, le=1.0)
    """Least candidate accuracy per slice: an upper bound below it (exact binomial, Holm) fails;
    a point estimate below it cannot pass."""
    min_instances: Int = Field(default=10, gt=0)
    """A slice with fewer paired instances makes the gate INCONCLUSIVE (never pooled away)."""
    slice_fields: list[str] | None = None
    """Case-file slice fields (e.g. risk, hops) that split each task x length x position slice,
    crossed; ``None`` takes every field the rows carry, ``[]`` none."""
    max_error_rate: Float = Field(default=0.05, ge=0.0, le=1.0)
    """More than this share of either run's rows in error makes the verdict INCONCLUSIVE."""
    stopping_rule: Literal["fixed-sample"] = "fixed-sample"
    """Every planned item runs once; no interim looks, no early stop."""
    errors: Literal["exclude-and-count"] = "exclude-and-count"
    """Error rows are excluded from the tests and counted in the record (the only rule)."""


class AnalysisConfig(StrictOptions):
    """How ``show`` and ``report`` analyse the run (the summary; read again at each analysis)."""

    base_lengths: list[Int] = Field(default_factory=lambda: [250, 500, 1000], min_length=1)
    """Lengths whose mean score is the base of the relative effective length (``nolima-0.85``):
    those that were tested (NoLiMa's rule); with none tested, the shortest tested length (never a
    pool of the lengths being judged). Every view says which lengths formed the base."""

    @field_validator("base_lengths")
    @classmethod
    def _positive_base_lengths(cls, lengths: list[int]) -> list[int]:
        if any(length <= 0 for length in lengths):
            raise ValueError("base lengths must be positive")
        return lengths


class ProviderLimits(StrictOptions):
    """How hard a run may press one provider: calls in flight, requests and tokens per minute.
    A call is charged its prompt tokens plus ``max_tokens`` against the token limit, so long
    prompts reach it first."""

    concurrency: Int = Field(default=4, gt=0)
    """Calls in flight at once."""
    requests_per_minute: OptionalFloat = Field(default=None, gt=0)
    """Requests started per minute; unset: no limit."""
    tokens_per_minute: OptionalFloat = Field(default=None, gt=0)
    """Tokens charged per minute (prompt plus ``max_tokens``); unset: no limit."""


class Price(StrictOptions):
    """List price of a model in USD per million tokens; cached input (prompt tokens read from the
    provider's prompt cache) and cache writes (prompt tokens written to it, which Anthropic bills
    above the input price) default to the input price."""

    input: Float = Field(ge=0)
    """USD per million prompt tokens."""
    output: Float = Field(ge=0)
    """USD per million reply tokens."""
    cached_input: OptionalFloat = Field(default=None, ge=0)
    """USD per million prompt tokens read from the provider's cache; unset: ``input``."""
    cache_write: OptionalFloat = Field(default=None, ge=0)
    """USD per million prompt tokens written to the provider's cache; unset: ``input``."""


class CacheConfig(StrictOptions):
    """The on-disk response cache of remote calls (default: the user's cache folder)."""

    enabled: bool = True
    """Reuse a cached reply to the same request instead of calling again."""
    path: Annotated[str | None, PathOption()] = None
    """The cache's folder; unset: the user's cache folder. Relative to the experiment file."""


_REMOTE = SectionOf("remote")


class JudgeConfig(StrictOptions):
    """An optional model that grades the replies deterministic scoring cannot decide."""

    model: str
    """The judge's model, as ``model:`` takes it (``provider/NAME``)."""
    max_tokens: Int = Field(default=8, gt=0)
    """The most tokens of the judge's reply (a verdict word)."""
    remote: Annotated[Any, _REMOTE, AfterValidator(_REMOTE.validate)] = Field(
        default_factory=dict, validate_default=True
    )
    """The judge's own connection settings (the keys of ``remote``): it never inherits the main
    model's ``remote`` (its server, key variable or parameters belong to another provider)."""


class SearchConfig(StrictOptions):
    """An adaptive search for the effective length (``rotscope run CONFIG --search``): the base is
    measured at ``base_length``, then a bisection on log length inside ``range`` adds instances at
    a length until an anytime-valid confidence sequence decides it, and stops when a passing and a
    failing length are at most ``resolution`` apart (see ``rotscope.search.decisions``)."""

    definition: str = Field(default="nolima-0.85", pattern=r"^(nolima|absolute)-(0?\.[0-9]+|1(\.0*)?)$")
    """``nolima-F``: a length passes when its score is at least F × the base score (paired by
    instance); ``absolute-S``: when its score is at least S."""
    range: list[Int] = Field(min_length=2, max_length=2)
    """``[min, max]`` prompt lengths in model tokens searched (up to the model's window)."""
    base_length: OptionalInt = Field(default=None, gt=0)
    """Where the base score is measured; ``None``: the experiment's shortest length."""
    resolution: Float = Field(default=2.0, gt=1.0)
    """The largest ratio of the first failing to the last passing length of a decided bracket.
    Finer costs more than calls can buy. Measured on the project's own curve family only
    (``benchmarks/search_accuracy.py``: accuracy logistic in log length, slope 2-6 per unit of log
    length, instance sd 0.5-1.5 logit, one haystack per instance, no haystack effect), 2.0 decides
    98% of searches at a cap of 512, 1.25 only 31% (``benchmarks/search_oracle.py``: at 1.25 most
    models need more than 256 instances at a bracket length, whatever the method). Gentler
    declines are decided less often: 68% of ``benchmarks/search_families.py``'s gentle family
    (slope 2, sd 1.5); a gentler decline than that was not measured here."""
    confidence: Float = Field(default=0.95, gt=0.5, lt=1.0)
    """The confidence of the sequence that decides each length (1 - its error rate)."""
    batch: Int = Field(default=8, gt=0)
    """Instances a length gets first; each later step at it doubles them."""
    cap: OptionalInt = Field(default=None, gt=0)
    """Instances a length may get before it is left undecided; ``None``: 512 or every case the task
    can make (within ``limit``), whichever is fewer, and a generated family is asked for that many
    (``cases_per_task``). A default below 128 (a family with few cases, such as nolima's 16) is
    refused, since so few instances rarely decide a length near the threshold; a cap set here is
    honoured, with a warning below 128. ``filler.variants`` unset: each instance gets a haystack of
    its own (instances sharing one would not be independent). How often the defaults decide:
    ``benchmarks/results/search_families.md``."""
    max_calls: OptionalInt = Field(default=None, gt=0)
    """Budget in model calls (a runtime field: ``--resume DIR --max-calls N`` continues)."""
    max_tokens: OptionalInt = Field(default=None, gt=0)
    """Budget in prompt tokens (a runtime field)."""

    @field_validator("range")
    @classmethod
    def _ascending(cls, ends: list[int]) -> list[int]:
        if not 0 < ends[0] < ends[1]:
            raise ValueError(f"range must be [min, max] with 0 < min < max, got {ends}")
        return ends
