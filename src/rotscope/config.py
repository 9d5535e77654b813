"""The experiment file: a YAML document validated by pydantic, with command-line overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rotscope._util.decode import check_encoding
from rotscope._util.strict_yaml import read_yaml
from rotscope.errors import BadInput
from rotscope.position import NAMED_POSITIONS as NAMED_POSITIONS
from rotscope.position import OFFSET_PREFIX as OFFSET_PREFIX
from rotscope.position import Position

BUNDLED_MODEL = "bundled"
DEFAULT_DEPTHS: tuple[float | str, ...] = ("beginning", "midpoint", "end")


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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class FillerConfig(_Strict):
    """Where haystack text comes from.

    ``code``: the source files of an installed package (``package``) or a directory (``path``);
    with neither, the Python standard library. ``text``: files matching ``glob``, or one
    ``field`` of each line of a ``jsonl`` file. ``readinglog``: generated service documents.
    """

    kind: str = "code"
    """The registered filler source: ``code``, ``text``, ``readinglog``, or one an outside package
    registers (``rotscope.filler.register_filler``)."""
    package: str | None = None
    path: str | None = None
    glob: str | None = None
    jsonl: str | None = None
    field: str = "text"
    encoding: str = "utf-8"
    """How the filler's files are decoded (``path``, ``glob``, ``jsonl``): any Python codec name
    (``utf-8``, ``latin-1``, ``cp1252``...). Decoding is strict: a byte that is not valid in this
    encoding stops the run naming the file and the byte's offset, never a silent replacement."""
    allow_repeat: bool = False
    options: dict[str, Any] = Field(default_factory=dict)
    """Settings of a source registered by an outside package, which validates them itself."""

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, encoding: str) -> str:
        return check_encoding(encoding)


class PlacementConfig(_Strict):
    """Where evidence other than the answer piece goes, relative to the grid's depth ``d``.

    ``support``: ``before`` puts the i-th support piece counted back from the answer at
    ``d - i * distance``; ``opposite`` puts them in the other half (``d + 0.5`` or ``d - 0.5``);
    ``depths`` takes ``support_depths`` in order. Decoys get independent seeded depths at least
    ``decoy_min_gap`` apart; superseded pieces a seeded depth before the answer.
    """

    support: Literal["before", "opposite", "depths"] = "before"
    distance: Float = Field(default=0.3, ge=0.0, le=1.0)
    support_depths: list[Float] = Field(default_factory=list)
    decoy_min_gap: Float = Field(default=0.1, ge=0.0, le=0.5)

    @field_validator("support_depths")
    @classmethod
    def _fractions(cls, depths: list[float]) -> list[float]:
        for depth in depths:
            if not 0.0 <= depth <= 1.0:
                raise ValueError(f"depth {depth} is outside [0, 1]")
        return depths


ReasoningSource = Literal["generated", "gsm8k", "arc"]
ReasoningFiller = Literal["with_solutions", "questions_only", "neutral"]
ReasoningLayout = Literal["end", "middle", "middle_twice", "middle_dup"]
_DEFAULT_FILLERS: tuple[ReasoningFiller, ...] = ("with_solutions", "questions_only")
_DEFAULT_LAYOUTS: tuple[ReasoningLayout, ...] = ("end", "middle", "middle_twice", "middle_dup")


class ReasoningConfig(_Strict):
    """The ``reasoning`` family: where its items come from, which fillers and layouts it crosses.

    ``source``: ``generated`` (seeded arithmetic word problems), ``gsm8k`` or ``arc`` (a local JSONL
    file, or Parquet for ARC, at ``path``). ``items``: how many target items; the rest of the pool
    is filler. ``neutral`` filler comes from the experiment's ``filler`` source.
    """

    source: ReasoningSource = "generated"
    path: str | None = None
    items: Int = Field(default=20, gt=0)
    fillers: list[ReasoningFiller] = Field(default_factory=lambda: list(_DEFAULT_FILLERS), min_length=1)
    layouts: list[ReasoningLayout] = Field(default_factory=lambda: list(_DEFAULT_LAYOUTS), min_length=1)

    @field_validator("fillers", "layouts")
    @classmethod
    def _no_repeats(cls, names: list[str]) -> list[str]:
        return list(dict.fromkeys(names))

    @model_validator(mode="after")
    def _file_sources_need_a_path(self) -> ReasoningConfig:
        if self.source != "generated" and not self.path:
            raise ValueError(f"source {self.source!r} reads a local file: set reasoning.path")
        return self


def _text(value: object) -> object:
    """Numbers written unquoted in YAML (``answer: 719``) are answers as text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


AnswerText = Annotated[str, BeforeValidator(_text, json_schema_input_type=str | int | float)]


class CodeLine(_Strict):
    """A line that exists in the code filler: the one line of ``file`` (a path relative to the
    filler's root) that contains ``line_contains``."""

    file: str
    line_contains: str = Field(min_length=1)


class CodebaseCase(_Strict):
    id: str
    question: str
    answer: AnswerText
    aliases: list[AnswerText] = Field(default_factory=list)
    decoys: list[AnswerText] = Field(default_factory=list)
    """Values present in the corpus that a wrong answer may name; scored as ``decoy``."""
    evidence: CodeLine


class CodebaseConfig(_Strict):
    """Cases of the ``codebase`` family, whose evidence is a line already in the code filler."""

    cases: list[CodebaseCase] = Field(min_length=1)


class GenerationConfig(_Strict):
    temperature: Float = Field(default=0.0, ge=0.0)
    max_tokens: Int = Field(default=32, gt=0)
    seed: Int = 0


class LlamaCppOptions(_Strict):
    """Engine settings of the llama.cpp backend. Defaults are measured on 2 CPU cores with the
    bundled model (benchmarks/engine_settings.py): one thread per core, and a batch of 256 prefills
    2,000 tokens at 226 tok/s against 173 tok/s with 2,048."""

    n_threads: OptionalInt = Field(default=None, gt=0)
    n_batch: Int = Field(default=256, gt=0)
    prefix_cache: bool = True
    """Keep the KV cache of the previous prompt and evaluate only what differs; ``false`` runs
    every prompt cold (the correctness guard compares both)."""
    state_cache_mb: Int = Field(default=0, ge=0)
    """Memory for saved engine states (llama.cpp's RAM cache), so a prompt whose prefix was
    evaluated earlier, but not just before, starts from it. Off by default: the trie order already
    evaluates each distinct prefix once; it helps orders that are not prefix-sorted."""
    extra_buffers: Literal["auto", "on", "off"] = "auto"
    """llama.cpp's extra weight buffers (CPU repack, AMX): ``auto`` uses them where a probe in a child
    process showed a multi-token prefill runs with them (once per machine and model file; AMX
    crashes there), ``off`` never, ``on`` always."""


class ExecutorConfig(_Strict):
    """Where calls run. ``auto``: a local engine in a worker process of its own (a native crash is an
    error row and a restart, not the end of the run), remote APIs on the run's event loop;
    ``inprocess``: the engine in the run's own process."""

    kind: Literal["auto", "inprocess"] = "auto"
    max_crashes: Int = Field(default=3, gt=0)
    """Engine crashes in a row after which the run stops (exit 5; ``--resume`` goes on)."""


class GateConfig(_Strict):
    """The pre-registered analysis of a release gate (frozen by ``rotscope plan``).

    The primary metric is instance-level accuracy; per slice the paired difference candidate minus
    baseline gets a cluster bootstrap distribution (instances resampled, ``resamples`` draws seeded
    by ``bootstrap_seed``), one-sided tests against ``-margin`` are Holm-adjusted across slices at
    ``alpha``. Error rows are excluded and counted; more than ``max_error_rate`` of either run's rows
    in error makes the verdict INCONCLUSIVE.
    """

    primary_metric: Literal["accuracy"] = "accuracy"
    interval: Literal["cluster-bootstrap-percentile"] = "cluster-bootstrap-percentile"
    resamples: Int = Field(default=4000, ge=100)
    bootstrap_seed: Int = 0
    alpha: Float = Field(default=0.05, gt=0.0, lt=0.5)
    multiple_comparisons: Literal["holm"] = "holm"
    margin: Float = Field(default=0.05, ge=0.0, lt=1.0)
    """Non-inferiority margin: a slice passes when candidate minus baseline is shown above -margin."""
    floor: Float = Field(default=0.0, ge=0.0, le=1.0)
    """Least candidate accuracy per slice (point estimate); a Wilson upper bound below it fails."""
    min_instances: Int = Field(default=10, gt=0)
    """A slice with fewer paired instances is INCONCLUSIVE; it is never pooled into a larger one."""
    slice_fields: list[str] | None = None
    """Case-file slice fields (e.g. risk, hops) that split each task x length x position slice,
    crossed; ``None`` takes every field the rows carry, ``[]`` none."""
    max_error_rate: Float = Field(default=0.05, ge=0.0, le=1.0)
    stopping_rule: Literal["fixed-sample"] = "fixed-sample"
    """Every planned item runs once; no interim looks, no early stop."""
    errors: Literal["exclude-and-count"] = "exclude-and-count"


class AnalysisConfig(_Strict):
    """How ``show`` and ``report`` analyse the run (the summary; read again at each analysis)."""

    base_lengths: list[Int] = Field(default_factory=lambda: [250, 500, 1000], min_length=1)
    """Lengths whose mean score is the base of the relative effective length (``nolima-0.85``):
    those that were tested; with none tested, every tested length up to 1.25 x the longest of them
    (the 1,024 of a 256/512/1,024 grid is in); else the shortest tested length."""

    @field_validator("base_lengths")
    @classmethod
    def _positive_base_lengths(cls, lengths: list[int]) -> list[int]:
        if any(length <= 0 for length in lengths):
            raise ValueError("base lengths must be positive")
        return lengths


class RemoteOptions(_Strict):
    """How to reach a model served elsewhere (``openai/…``, ``anthropic/…``, ``gemini/…``).

    The API key is read at call time from the environment variable ``api_key_env`` names (the
    provider's usual variable when unset); the key itself is never part of the config.
    ``tokenizer`` counts lengths locally: a GGUF file (its vocabulary and chat template), a Hugging
    Face ``tokenizer.json``, or ``tiktoken:NAME`` (only when the encoding is cached locally); with
    none, lengths are an estimate and the run is marked approximate.
    """

    base_url: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout_s: Float = Field(default=120.0, gt=0.0)
    max_attempts: Int = Field(default=6, ge=1)
    backoff_initial_s: Float = Field(default=1.0, ge=0.0)
    backoff_max_s: Float = Field(default=60.0, ge=0.0)
    tokenizer: str | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """OpenAI reasoning models take ``max_completion_tokens``; most compatible servers ``max_tokens``."""
    reasoning_effort: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    """Extra request fields passed through unchanged (e.g. ``top_p``, provider-specific options)."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        """A server address is ``http(s)://HOST[:PORT][/PATH]``: anything else could only be
        retried until every row is an error."""
        if url is None:
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
        return url


class ProviderLimits(_Strict):
    """How hard a run may press one provider: calls in flight, requests and tokens per minute.
    A call is charged its prompt tokens plus ``max_tokens`` against the token limit, so long
    prompts reach it first."""

    concurrency: Int = Field(default=4, gt=0)
    requests_per_minute: OptionalFloat = Field(default=None, gt=0)
    tokens_per_minute: OptionalFloat = Field(default=None, gt=0)


class Price(_Strict):
    """List price of a model in USD per million tokens; cached input defaults to the input price."""

    input: Float = Field(ge=0)
    output: Float = Field(ge=0)
    cached_input: OptionalFloat = Field(default=None, ge=0)


class CacheConfig(_Strict):
    """The on-disk response cache of remote calls (default: the user's cache folder)."""

    enabled: bool = True
    path: str | None = None


class JudgeConfig(_Strict):
    """An optional model that grades the replies deterministic scoring cannot decide."""

    model: str
    max_tokens: Int = Field(default=8, gt=0)
    remote: RemoteOptions = Field(default_factory=RemoteOptions)
    """The judge's own connection settings: it never inherits the main model's ``remote`` (its
    server, key variable or parameters belong to another provider)."""


class ExperimentConfig(_Strict):
    name: str = "experiment"
    model: str = BUNDLED_MODEL
    tasks: list[str] = Field(default_factory=lambda: ["niah"], min_length=1)
    lengths: list[Int] = Field(default_factory=lambda: [256, 512, 1024], min_length=1)
    depths: list[Depth] = Field(default_factory=lambda: list(DEFAULT_DEPTHS), min_length=1)
    trials: Int = Field(default=1, gt=0)
    seed: Int = 0
    limit: OptionalInt = Field(default=None, gt=0)
    controls: bool = True
    evidence_only: bool = False
    """Also run each case with its evidence alone, no padding: a case failing there is a capability
    failure, reported apart from positional ones."""
    cases: str | None = Field(default=None, validate_default=True)
    """The case file (JSON Lines) of the ``cases`` task family; relative to the experiment file."""
    questions_per_prompt: Int = Field(default=1, gt=0)
    filler: FillerConfig = Field(default_factory=FillerConfig)
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    llamacpp: LlamaCppOptions = Field(default_factory=LlamaCppOptions)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig)
    remote: RemoteOptions = Field(default_factory=RemoteOptions)
    system_prompt: str | None = None
    limits: dict[str, ProviderLimits] = Field(default_factory=dict)
    """Per provider (``openai``, ``anthropic``...); a provider not listed gets the defaults."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Per model (``openai/gpt-4o-mini``), added to and overriding the built-in table."""
    max_cost: OptionalFloat = Field(default=None, gt=0)
    """USD for the whole run folder: no call starts that could take the spend above it."""
    max_error_rate: Float = Field(default=0.05, ge=0.0, le=1.0)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    judge: JudgeConfig | None = None
    length_tolerance: Float = Field(default=0.05, gt=0.0, lt=1.0)
    depth_tolerance: Float = Field(default=0.1, gt=0.0, le=1.0)
    out: str | None = None
    gate: GateConfig = Field(default_factory=GateConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    cache_control: bool = False
    """After the run, re-run a seeded sample of items with the engine's cache cleared and compare."""
    cache_control_sample: Int = Field(default=8, gt=0)
    codebase: CodebaseConfig | None = None

    @field_validator("lengths")
    @classmethod
    def _positive_lengths(cls, lengths: list[int]) -> list[int]:
        for length in lengths:
            if length <= 0:
                raise ValueError(f"length {length} is not positive")
        return sorted(set(lengths))

    @field_validator("depths")
    @classmethod
    def _known_depths(cls, depths: list[float | str]) -> list[float | str]:
        for depth in depths:
            Position.parse(depth)
        return depths

    @field_validator("cases")
    @classmethod
    def _case_file_named(cls, cases: str | None, info: ValidationInfo) -> str | None:
        if "cases" in info.data.get("tasks", []) and not cases:
            raise ValueError("the cases task family needs a case file: cases: PATH.jsonl")
        return cases

    def parsed_positions(self) -> list[Position]:
        """The depths of the grid, each parsed once, in the order given, without repeats."""
        return list(dict.fromkeys(Position.parse(depth) for depth in self.depths))

    def positions(self) -> list[tuple[float, str | None]]:
        """Fractional depths as (fraction, name or None), in the order given, one per fraction;
        absolute offsets are in ``offsets``."""
        seen: dict[float, str | None] = {}
        for position in self.parsed_positions():
            if position.fraction is not None:
                seen.setdefault(position.fraction, position.name)
        return list(seen.items())

    def offsets(self) -> list[int]:
        """Absolute offsets (filler tokens before the evidence), in the order given, without repeats."""
        return [p.offset_tokens for p in self.parsed_positions() if p.offset_tokens is not None]


def _first_error(error: ValidationError, source: str) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown key {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    return f"{source}: field {where!r}: {message} (got {first.get('input')!r})"


def build_config(data: dict[str, Any], source: str = "config") -> ExperimentConfig:
    """Validate a mapping into an ``ExperimentConfig``; bad input raises ``BadInput`` in one line."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as error:
        raise BadInput(_first_error(error, source)) from None


def read_config_file(path: Path, paths_from: Path | None = None) -> dict[str, Any]:
    """The raw mapping of a YAML experiment file, its relative paths resolved against the file's
    folder or ``paths_from`` (``resolve_paths``), or ``BadInput`` naming what is wrong."""
    if not path.is_file():
        raise BadInput(f"{path}: config file not found")
    data = read_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadInput(f"{path}: the experiment file must be a mapping of fields, got {type(data).__name__}")
    return resolve_paths(data, path.parent if paths_from is None else paths_from)


def _absolute(value: object, base: Path) -> object:
    """A relative path (or glob pattern) made absolute against ``base``; anything else unchanged."""
    if not isinstance(value, str) or not value:
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    return os.path.normpath(base.resolve() / path)


def _model_path(model: object, base: Path) -> object:
    """A llama.cpp model given by path (``PATH.gguf`` or ``llamacpp/PATH``) made absolute."""
    if not isinstance(model, str) or model == BUNDLED_MODEL:
        return model
    if model.startswith("llamacpp/"):
        return f"llamacpp/{_absolute(model.removeprefix('llamacpp/'), base)}"
    return _absolute(model, base) if model.endswith(".gguf") else model


def _tokenizer_path(spec: object, base: Path) -> object:
    if isinstance(spec, str) and spec.startswith("tiktoken:"):
        return spec
    return _absolute(spec, base)


_SECTION_PATHS = (("filler", ("path", "glob", "jsonl")), ("reasoning", ("path",)), ("cache", ("path",)))


def _section(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    section = data.get(key)
    if not isinstance(section, dict):
        return None  # absent, or wrong: validation names it
    data[key] = section = dict(section)
    return section


def resolve_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Every path of an experiment mapping made absolute against ``base`` (the experiment file's
    folder; the current folder for command-line flags), so the resolved config stored in the run
    folder and in plans names the same files wherever it is read from: ``model`` (a GGUF path),
    ``cases``, ``out``, ``filler.path``/``glob``/``jsonl``, ``reasoning.path``, ``cache.path``,
    ``remote.tokenizer`` and ``judge.remote.tokenizer`` (unless ``tiktoken:NAME``)."""
    data = dict(data)
    if "model" in data:
        data["model"] = _model_path(data["model"], base)
    for key in ("cases", "out"):
        if key in data:
            data[key] = _absolute(data[key], base)
    for name, keys in _SECTION_PATHS:
        section = _section(data, name)
        for key in keys:
            if section is not None and key in section:
                section[key] = _absolute(section[key], base)
    for owner in (data, _section(data, "judge")):
        remote = _section(owner, "remote") if owner is not None else None
        if remote is not None and "tokenizer" in remote:
            remote["tokenizer"] = _tokenizer_path(remote["tokenizer"], base)
    return data


def load_config(
    path: Path, overrides: dict[str, Any] | None = None, *, paths_from: Path | None = None
) -> ExperimentConfig:
    """Read a YAML experiment file, apply overrides (non-None values; their paths relative to the
    current folder), validate. The file's relative paths resolve against its folder, or against
    ``paths_from`` when given."""
    data = read_config_file(path, paths_from)
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    data.update(resolve_paths(given, Path.cwd()))
    return build_config(data, str(path))


def dump_config(config: ExperimentConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


def quick_config_data() -> dict[str, Any]:
    """The built-in quick experiment, sized to finish in minutes on two CPU cores."""
    return {
        "name": "quick",
        "tasks": ["niah", "nolima"],
        "lengths": [256, 512, 1024],
        "depths": ["beginning", "midpoint", "end"],
        "limit": 3,
    }
