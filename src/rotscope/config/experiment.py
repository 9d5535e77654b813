"""The experiment file: a YAML document validated by pydantic, with command-line overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rotscope import registry
from rotscope._util.strict_yaml import read_yaml
from rotscope.config.assembly import (
    SectionHolder,
    check_overrides,
    filler_model,
    first_error,
    typed_filler_options,
    validate_sections,
)
from rotscope.config.assembly import SubjectConfig as SubjectConfig
from rotscope.config.options import (
    PathOption,
    RuntimeOption,
    absolute,
    claimed_sections,
    registered_sections,
    resolve_marked_paths,
)
from rotscope.config.sections import AnalysisConfig as AnalysisConfig
from rotscope.config.sections import CacheConfig as CacheConfig
from rotscope.config.sections import Depth as Depth
from rotscope.config.sections import ExecutorConfig as ExecutorConfig
from rotscope.config.sections import FillerConfig as FillerConfig
from rotscope.config.sections import Float as Float
from rotscope.config.sections import GateConfig as GateConfig
from rotscope.config.sections import GenerationConfig as GenerationConfig
from rotscope.config.sections import Int as Int
from rotscope.config.sections import JudgeConfig as JudgeConfig
from rotscope.config.sections import OptionalFloat as OptionalFloat
from rotscope.config.sections import OptionalInt as OptionalInt
from rotscope.config.sections import PlacementConfig as PlacementConfig
from rotscope.config.sections import Price as Price
from rotscope.config.sections import ProviderLimits as ProviderLimits
from rotscope.config.sections import SearchConfig as SearchConfig
from rotscope.config.sections import StrictOptions as StrictOptions
from rotscope.config.spec import SectionSpec, section_spec
from rotscope.errors import BadInput
from rotscope.position import NAMED_POSITIONS as NAMED_POSITIONS
from rotscope.position import OFFSET_PREFIX as OFFSET_PREFIX
from rotscope.position import Position

BUNDLED_MODEL = "bundled"
DEFAULT_DEPTHS: tuple[float | str, ...] = ("beginning", "midpoint", "end")
S = TypeVar("S", bound=BaseModel)


def _model_path(model: object, base: Path) -> object:
    """A model given by path (``PATH.gguf``, or ``PROVIDER/PATH`` for a provider whose section
    declares a ``SectionSpec.model_name_form``) made absolute."""
    if not isinstance(model, str) or model == BUNDLED_MODEL:
        return model
    provider, slash, name = model.partition("/")
    if slash:
        section = registry.sections().get(provider)
        form = section_spec(section.model).model_name_form if section is not None else None
        if form == "path" and name != BUNDLED_MODEL:
            return f"{provider}/{absolute(name, base)}"
        if form == "path-or-command" and "/" in name:
            return f"{provider}/{absolute(name, base)}"
        if form is not None:
            return model
    return absolute(model, base) if model.endswith(".gguf") else model


class ExperimentConfig(SectionHolder):
    SECTION: ClassVar[SectionSpec] = SectionSpec(takes_sections=True)
    """A top-level key that is no field below may be a component's own options section (the
    built-in ones through the ``rotscope.sections`` entry points, an outside one also through
    ``rotscope.registry.register_section``): validated by its class, kept in ``sections``, read as
    ``config.section(Class)``."""

    name: str = "experiment"
    """The experiment's name, shown in every view and in the run folder's metadata."""
    model: Annotated[str, PathOption(resolve=_model_path, by_content="subject.model_digest")] = BUNDLED_MODEL
    """The model under test: ``bundled``, a GGUF path, or ``provider/NAME`` (``hf/PATH``,
    ``openai/gpt-4o-mini``, ``cmd/PATH``...; ``rotscope models`` lists them); a path is relative to
    the experiment file."""
    tasks: list[str] = Field(default_factory=lambda: ["niah"], min_length=1)
    """The task families run, by registered name (``niah``, ``nolima``, ``multihop``...)."""
    lengths: list[Int] = Field(default_factory=lambda: [256, 512, 1024], min_length=1)
    """Prompt lengths in the model's tokens, each a length of the grid (sorted, repeats dropped)."""
    depths: list[Depth] = Field(default_factory=lambda: list(DEFAULT_DEPTHS), min_length=1)
    """Where the evidence sits in the haystack: a fraction in [0, 1], a position name
    (``beginning``, ``midpoint``, ``end``...) or ``@N`` (N filler tokens before it)."""
    trials: Int = Field(default=1, gt=0)
    """Calls per prompt; trial ``t`` decodes with ``generation.seed + t``."""
    seed: Int = 0
    """The planning's seed: the haystacks' document order, seeded placements, the bundling of
    questions and the cases that families draw."""
    limit: OptionalInt = Field(default=None, gt=0)
    """At most this many cases of each task (after ``case_offset``); unset: every case."""
    controls: bool = True
    """Also run each case's evidence-absent control (its prompt without the evidence), which shows
    what the model answers without it."""
    score: Literal["accuracy", "likelihood", "both"] | None = None
    """What each row keeps (docs/statistics.md, "Scores"): ``accuracy``, the reply and whether it
    was right; ``likelihood``, the gold answer's log-probability read in a prefill, no generation;
    ``both``. Unset: ``both`` where the backend reads likelihoods (``rotscope models`` says which),
    else ``accuracy``. A likelihood asked of a backend that cannot is refused before any call."""
    inject: list[str] = Field(default_factory=list)
    """Assembly faults applied to every verified prompt before any call, in order (``run --inject``):
    ``trim-head``, ``trim-tail`` (each ``=FRACTION`` of the haystack, default 0.25),
    ``tokenizer-shift``, ``reorder``, ``add-passage``, ``duplicate-distractor``, ``smaller-window``
    (``=TOKENS``, default three quarters of the longest length). Part of the run's identity and
    of every item's; each row records its faults and the evidence they removed (docs/gates.md,
    "Injected assembly faults"). Empty: the prompts as rendered."""
    evidence_only: bool = False
    """Also run each case with its evidence alone, no padding: a case failing there is a capability
    failure, reported apart from positional ones."""
    cases: Annotated[str | None, PathOption(by_content="cases.digest")] = Field(
        default=None, validate_default=True
    )
    """The case file (JSON Lines) of the ``cases`` task family; relative to the experiment file."""
    replay: Annotated[str | None, PathOption()] = Field(default=None, validate_default=True)
    """Recorded prompts (JSON Lines) of the ``replay`` task family, evidence marked; relative to the
    experiment file."""
    questions_per_prompt: Int = Field(default=1, gt=0)
    """Cases asked together in one prompt, their evidence in one haystack (1: one question a
    prompt)."""
    cases_per_task: Int = Field(default=16, gt=0)
    """How many cases each built-in family makes (``limit`` then takes the first of them). The
    first 16 are the families' own (their ids unchanged); ``niah``, ``competitive``, ``multihop``,
    ``latent`` and ``join`` generate more, deterministically, with invented names and values (up to
    1,000; ``join`` 200). ``nolima`` has only its 16 hand-written cases (its hop goes through world
    knowledge): asking more of it is an error naming the maximum. ``reasoning`` counts
    ``reasoning.items``; ``codebase`` and ``cases`` have the cases written for them."""
    filler: FillerConfig = Field(default_factory=FillerConfig)
    """Where the haystack's text comes from: a registered filler source and its settings."""
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    """Where evidence other than the answer piece (support pieces, decoys) goes in the haystack."""
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    """How replies are decoded (temperature, reply length, seed), the same for every call."""
    executor: Annotated[ExecutorConfig, RuntimeOption()] = Field(default_factory=ExecutorConfig)
    """Where calls run: a worker process, this process, or Ray actors."""
    system_prompt: str | None = None
    """A system message before every prompt (unset: none)."""
    chat_template: Annotated[str | None, PathOption(by_content="subject.template_digest")] = None
    """A Jinja chat template file used instead of the model's own (Hugging Face style: ``messages``,
    ``add_generation_prompt``); relative to the experiment file. Only for engines that take token ids
    (``llamacpp``, ``hf``, ``vllm``, ``fake``): a remote API applies its server's template."""
    limits: Annotated[dict[str, ProviderLimits], RuntimeOption()] = Field(default_factory=dict)
    """Per provider (``openai``, ``anthropic``...); a provider not listed gets the defaults."""
    prices: Annotated[dict[str, Price], RuntimeOption()] = Field(default_factory=dict)
    """Per model (``openai/gpt-4o-mini``), added to and overriding the built-in table."""
    max_cost: Annotated[OptionalFloat, RuntimeOption()] = Field(default=None, gt=0)
    """USD for the whole run folder: no call starts that could take the spend above it."""
    max_error_rate: Annotated[Float, RuntimeOption()] = Field(default=0.05, ge=0.0, le=1.0)
    """The share of error rows above which every view warns that accuracy rests on fewer items than
    planned (the summary's ``error_cap``)."""
    cache: Annotated[CacheConfig, RuntimeOption()] = Field(default_factory=CacheConfig)
    """The on-disk response cache of remote calls."""
    judge: JudgeConfig | None = None
    """A model grading the replies deterministic scoring cannot decide (unset: none)."""
    length_tolerance: Float = Field(default=0.05, gt=0.0, lt=1.0)
    """How far a built prompt's length may be from the asked length, as a fraction of it; a
    prompt outside is refused by verification, never run."""
    depth_tolerance: Float = Field(default=0.1, gt=0.0, le=1.0)
    """How far the evidence's reached depth may be from the asked depth (a fraction of the
    haystack); a prompt outside is refused by verification."""
    out: Annotated[str | None, PathOption(), RuntimeOption()] = None
    """The run folder; unset: ``runs/NAME-TIMESTAMP`` in the current folder. Relative to the
    experiment file."""
    gate: GateConfig = Field(default_factory=GateConfig)
    """The release gate's pre-registered analysis (frozen by ``rotscope plan``)."""
    analysis: Annotated[AnalysisConfig, RuntimeOption()] = Field(default_factory=AnalysisConfig)
    """How ``show`` and ``report`` analyse the run (read again at each analysis)."""
    order: Annotated[Literal["interleaved", "grouped", "prefix"], RuntimeOption()] = "grouped"
    """The order of a remote run's calls (a local engine always runs in prefix-trie order):
    ``interleaved`` shuffles all calls, ``grouped`` shuffles whole prefix groups and keeps each
    group's calls together so a provider's prompt cache warms once per group, ``prefix`` is the
    full trie order (for a server without drift). See ``rotscope.plan.schedule``."""
    cache_control: bool = False
    """After the run, re-run a seeded sample of items with the engine's cache cleared and compare."""
    cache_control_sample: Int = Field(default=8, gt=0)
    """``cache_control``: how many items are run again with the cache cleared."""
    case_offset: Int = Field(default=0, ge=0)
    """Skip the first N cases of each task (before ``limit``): a search's later steps at a length
    take the instances after those it has."""
    search: SearchConfig | None = None
    """An adaptive search for the effective length instead of the grid (``rotscope run --search``)."""
    subjects: list[SubjectConfig] = Field(default_factory=list)
    """The subjects of a release, defined once: each a name, a model and the overrides it carries
    (system prompt, chat template, engine options). ``rotscope run --pair A,B`` takes their names
    (or plain model names); a subject's overrides are part of its run's identity."""
    subject: str | None = None
    """The subject this run folder is (set by ``--pair``, with ``subjects`` reduced to its own
    definition and its overrides applied); unset: the experiment's own settings."""

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

    @field_validator("replay")
    @classmethod
    def _replay_file_named(cls, replay: str | None, info: ValidationInfo) -> str | None:
        if "replay" in info.data.get("tasks", []) and not replay:
            raise ValueError("the replay task family needs a file of recorded prompts: replay: PATH.jsonl")
        return replay

    @field_validator("subject")
    @classmethod
    def _subject_defined(cls, subject: str | None, info: ValidationInfo) -> str | None:
        names = [item.name for item in info.data.get("subjects", [])]
        if subject is not None and subject not in names:
            raise ValueError(f"subject {subject!r} is not among the subjects defined ({', '.join(names)})")
        return subject

    @model_validator(mode="wrap")
    @classmethod
    def _sections_valid(
        cls, data: Any, handler: ModelWrapValidatorHandler[ExperimentConfig]
    ) -> ExperimentConfig:
        """Each registered section's key validated by its class (strict): the built-in ones always
        (their defaults, or ``None`` for a class with a required key, when the file leaves them out),
        the outside ones when given; any other unknown key stays an error. Then each subject's
        engine overrides, checked against the experiment's sections."""
        if not isinstance(data, dict):
            return handler(data)
        data = typed_filler_options(data)
        claimed = claimed_sections([key for key in data if key not in cls.model_fields])
        config = handler({key: value for key, value in data.items() if key not in claimed})
        known = registry.sections()
        present = {name: model for name, model in registered_sections(cls).items() if known[name].present}
        config._sections = validate_sections(cls.__name__, data, {**present, **claimed})
        config.__pydantic_fields_set__.update(key for key in claimed if key in data)
        check_overrides(config.subjects, config._sections)
        return config

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


def build_config(data: dict[str, Any], source: str = "config") -> ExperimentConfig:
    """Validate a mapping into an ``ExperimentConfig``; bad input raises ``BadInput`` in one line."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as error:
        raise BadInput(first_error(error, source)) from None


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


def resolve_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Every path of an experiment mapping made absolute against ``base`` (the experiment file's
    folder; the current folder for command-line flags), so the resolved config stored in the run
    folder and in plans names the same files wherever it is read from: the fields each section
    marks ``PathOption`` (``rotscope.config.options``), in nested sections too, and those of each subject
    (``subjects``), read as the experiment's own keys."""
    data = _own_paths(data, base)
    filler = data.get("filler")
    model_of_options = filler_model(filler)
    if model_of_options is not None and isinstance(filler, dict) and isinstance(filler.get("options"), dict):
        data["filler"] = {
            **filler,
            "options": resolve_marked_paths(model_of_options, filler["options"], base),
        }
    return _section_paths(data, base, subject=False)


def _section_paths(data: dict[str, Any], base: Path, *, subject: bool) -> dict[str, Any]:
    """``data`` with the paths of each registered section it gives resolved (``subject``: only the
    sections a subject may override)."""
    keys = [key for key in data if key not in (SubjectConfig if subject else ExperimentConfig).model_fields]
    for key, model in claimed_sections(keys, subject=subject).items():
        if isinstance(data[key], dict):
            data[key] = resolve_marked_paths(model, data[key], base)
    return data


def _own_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    data = resolve_marked_paths(ExperimentConfig, data, base)
    if isinstance(data.get("subjects"), list):
        data["subjects"] = [_subject_paths(item, base) for item in data["subjects"]]
    return data


def _subject_paths(subject: object, base: Path) -> object:
    """A subject's model, chat template and engine paths made absolute, as the experiment's are."""
    if not isinstance(subject, dict):
        return subject  # wrong: validation names it
    resolved = {key: value for key, value in _own_paths(subject, base).items() if key in subject}
    return _section_paths(resolved, base, subject=True)


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
    """The built-in quick experiment (``examples/quick.yaml``): sized to about two minutes on two
    CPU cores, chosen so the bundled model's first run shows where it falls. Every one of the 16
    needle cases sits in the middle of a reading log of its own (16 haystack variants: with 3, the
    bundled model's answers followed which text a case drew more than the length), at 256, 512 and
    1,024 tokens, scored against 256 tokens as the base. The frozen grid of 2026-12-01 (niah and
    nolima, 3 depths, with evidence-absent controls) is ``examples/quick-v1.yaml``."""
    return {
        "name": "quick",
        "tasks": ["niah"],
        "lengths": [256, 512, 1024],
        "depths": ["midpoint"],
        "limit": 16,
        "controls": False,
        "filler": {"kind": "readinglog", "variants": 16},
        "analysis": {"base_lengths": [256]},
    }
