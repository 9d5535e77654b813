"""How the experiment model takes the registered sections (``rotscope.registry``): each section's
key validated by its class and dumped beside the model's own fields (``SectionHolder``, the base
of ``rotscope.config.experiment.ExperimentConfig``), a subject (``SubjectConfig``) taking the engine
sections' keys as its overrides, checked against the experiment's, and ``filler.options`` typed by
its source's class. The sections themselves live with their components."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails

from rotscope import registry
from rotscope.config.options import claimed_sections
from rotscope.config.spec import SectionSpec, StrictOptions
from rotscope.errors import BadInput

S = TypeVar("S", bound=BaseModel)


def placed(name: str, item: Any) -> InitErrorDetails:
    """A section's validation error placed under its key."""
    detail: InitErrorDetails = {"type": item["type"], "loc": (name, *item["loc"]), "input": item["input"]}
    if "ctx" in item:
        detail["ctx"] = item["ctx"]
    return detail


def takes_keys(model: type[BaseModel]) -> bool:
    """Whether a section needs keys of the file's (a field without a default): left out, it is
    ``None`` (``codebase``); any other section left out is its defaults."""
    return any(field.is_required() for field in model.model_fields.values())


def validate_sections(
    owner: str, data: Mapping[str, Any], models: Mapping[str, type[BaseModel]]
) -> dict[str, BaseModel | None]:
    """Each of ``models`` (by key) validated from ``data``: as given, else its defaults (``None``
    for a section that takes keys, and for such a section given as ``null``); an error placed under
    its key, raised as ``owner``'s."""
    validated: dict[str, BaseModel | None] = {}
    for name, model in models.items():
        optional = takes_keys(model)
        try:
            if name not in data:
                validated[name] = None if optional else model()
            else:
                given = data[name]
                validated[name] = None if optional and given is None else model.model_validate(given)
        except ValidationError as error:
            details = [placed(name, item) for item in error.errors()]
            raise ValidationError.from_exception_data(owner, details) from None
    return validated


def dumped(name: str, info: SerializationInfo, given: set[str]) -> bool:
    """Whether a registered section ``name`` is part of a dump asked with ``info`` (its ``include``,
    ``exclude`` and ``exclude_unset``; ``given``: the keys the input set)."""
    include: Any = info.include
    exclude: Any = info.exclude
    if include is not None and name not in include:
        return False
    if exclude is not None and name in exclude and (not isinstance(exclude, dict) or exclude[name] is True):
        return False
    return not (info.exclude_unset and name not in given)


def dump_sections(
    data: dict[str, Any], sections: Mapping[str, BaseModel | None], info: SerializationInfo, given: set[str]
) -> dict[str, Any]:
    """``data`` (a model's own dump) with each section dumped as ``info`` asks, after its fields."""
    exclude: Any = info.exclude
    for name, section in sections.items():
        if not dumped(name, info, given):
            continue
        if section is None:
            if not info.exclude_none:
                data[name] = None
            continue
        data[name] = section.model_dump(
            mode=info.mode,
            by_alias=bool(info.by_alias),
            exclude=(exclude.get(name) if isinstance(exclude, dict) else None) or None,
            exclude_unset=info.exclude_unset,
            exclude_defaults=info.exclude_defaults,
            exclude_none=info.exclude_none,
        )
    return data


def check_overrides(subjects: Sequence[SubjectConfig], sections: Mapping[str, BaseModel | None]) -> None:
    """Subject names unique; each engine override a key its section knows, with a value it accepts;
    else an error placed at ``subjects``."""
    seen: set[str] = set()
    for subject in subjects:
        problem = f"subject name {subject.name!r} is defined twice" if subject.name in seen else None
        seen.add(subject.name)
        for name, override in subject.overrides().items():
            if problem is not None or not isinstance(override, dict):
                continue
            base = sections.get(name)
            known = registry.sections().get(name)
            model = type(base) if base is not None else known.model if known is not None else None
            if model is None or not issubclass(model, BaseModel) or takes_keys(model):
                continue
            try:  # over the experiment's section, or over its defaults when the file has none
                model.model_validate({**(base.model_dump() if base is not None else {}), **override})
            except ValidationError as error:
                first = error.errors()[0]
                key = ".".join(str(part) for part in first["loc"])
                wrong = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
                problem = f"subject {subject.name!r}: {name}.{key}: {wrong}"
        if problem is not None:
            detail: InitErrorDetails = {
                "type": "value_error",
                "loc": ("subjects",),
                "input": [item.model_dump(mode="json") for item in subjects],
                "ctx": {"error": ValueError(problem)},
            }
            raise ValidationError.from_exception_data("ExperimentConfig", [detail])


def filler_model(filler: object) -> type[BaseModel] | None:
    """The class an outside filler source types its ``filler.options`` with, if any (outside
    components imported only for a kind that is not known yet and has options given)."""
    if not isinstance(filler, dict) or not isinstance(filler.get("kind"), str):
        return None
    kind = filler["kind"]
    if registry.filler_options(kind) is None and filler.get("options"):
        registry.load_outside()
    section = registry.filler_options(kind)
    if section is None or not (isinstance(section.model, type) and issubclass(section.model, BaseModel)):
        return None
    return section.model


def typed_filler_options(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``filler.options`` validated by its source's class (its defaults filled in),
    or the validation error placed at ``filler.options``."""
    filler = data.get("filler")
    model = filler_model(filler)
    if model is None or not isinstance(filler, dict):
        return data
    try:
        options = model.model_validate(filler.get("options") or {})
    except ValidationError as error:
        details = [placed("filler", {**item, "loc": ("options", *item["loc"])}) for item in error.errors()]
        raise ValidationError.from_exception_data("ExperimentConfig", details) from None
    return {**data, "filler": {**filler, "options": options.model_dump(mode="json")}}


def first_error(error: ValidationError, source: str) -> str:
    """The first of a validation error's problems as one line naming ``source`` and the key."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown key {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    return f"{source}: field {where!r}: {message} (got {first.get('input')!r})"


class SectionHolder(StrictOptions):
    """A model that holds registered sections beside its fields (the experiment file's model): kept
    validated in ``_sections`` (set by the model's validator, ``validate_sections``), dumped after
    its fields, read as ``section(Class)``."""

    _sections: dict[str, BaseModel | None] = PrivateAttr(default_factory=dict)

    @model_serializer(mode="wrap")
    def _dump_sections(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """The fields as pydantic dumps them, then each section: the built-in ones always (as when
        they were fields), an outside one when the file gave it."""
        data = handler(self)
        if isinstance(data, dict):
            dump_sections(data, self._sections, info, self.model_fields_set)
        return data

    @property
    def sections(self) -> dict[str, BaseModel]:
        """The sections this config holds, validated, by key: the built-in ones and the outside
        ones the experiment file gives (a built-in one left out with a required key is absent)."""
        return {name: value for name, value in self._sections.items() if value is not None}

    def section(self, model: type[S]) -> S:
        """The section of class ``model``: as the experiment file gives it, else its defaults (a
        section with a required key the file leaves out is bad input naming it)."""
        found = self.optional_section(model)
        if found is not None:
            return found
        try:
            return model()
        except ValidationError as error:
            name = next((item.name for item in registry.sections().values() if item.model is model), None)
            raise BadInput(first_error(error, f"config: section {name or model.__name__!r}")) from None

    def optional_section(self, model: type[S]) -> S | None:
        """The section of class ``model`` as the experiment file gives it, else ``None`` for a
        section left out that has a required key (``codebase``), else its defaults."""
        for value in self._sections.values():
            if isinstance(value, model):
                return value
        return None


SUBJECT_NAME = r"^[A-Za-z][A-Za-z0-9_-]*$"
"""A subject's name: a word (letters, digits, ``_``, ``-``), so it can never be read as a model name
(``provider/NAME``, a ``.gguf`` path, ``bundled``)."""
_MAPPING: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


def subject_sections() -> list[str]:
    """The registered sections a subject may override key by key (the engines' options), the
    built-in ones first."""
    return [name for name, section in registry.sections().items() if section.subject]


class SubjectConfig(StrictOptions):
    """One subject of a release (``subjects:``): a name, a model, and the overrides it carries over
    the experiment's own settings. ``--pair A,B`` takes subject names (or plain model names); the
    cases, grid, seeds, decoding and gate stay the experiment's, so both subjects get the same items.
    Beside the keys below, each engine section (``registry.Section.subject``: ``llamacpp``, ``hf``,
    ``vllm``, ``cmd``, ``remote``) is a key holding the keys of it this subject sets
    (``llamacpp: {n_batch: 512}``), the rest the experiment's."""

    SECTION: ClassVar[SectionSpec] = SectionSpec(takes_overrides=True)
    """Keys of the subject-overridable sections are taken, as mappings (``subject_sections``)."""
    _engines: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

    name: str = Field(pattern=SUBJECT_NAME, max_length=64)
    """How ``--pair`` names it; unique among the subjects, never ``bundled``."""
    model: str
    """The subject's model, as ``model:`` takes it (a GGUF path, ``bundled``, ``provider/NAME``)."""
    system_prompt: str | None = None
    """Replaces the experiment's ``system_prompt`` for this subject (unset: the experiment's)."""
    chat_template: str | None = None
    """A Jinja chat template file replacing the model's own for this subject (local engines that take
    token ids only); relative to the experiment file. Unset: the experiment's ``chat_template``."""

    @model_validator(mode="wrap")
    @classmethod
    def _engine_keys(cls, data: Any, handler: ModelWrapValidatorHandler[SubjectConfig]) -> SubjectConfig:
        """The engine sections' keys kept as given (checked against the experiment's sections by
        ``ExperimentConfig``); any other unknown key stays an error."""
        if not isinstance(data, dict):
            return handler(data)
        engines = claimed_sections([key for key in data if key not in cls.model_fields], subject=True)
        subject = handler({key: value for key, value in data.items() if key not in engines})
        given: dict[str, dict[str, Any]] = {}
        for name in engines:
            try:
                given[name] = _MAPPING.validate_python(data[name])
            except ValidationError as error:
                details = [placed(name, item) for item in error.errors()]
                raise ValidationError.from_exception_data(cls.__name__, details) from None
        subject._engines = {name: value for name, value in given.items() if value}
        subject.__pydantic_fields_set__.update(given)
        return subject

    @model_serializer(mode="wrap")
    def _dump_engines(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """The fields, then each built-in engine section's overrides (``{}``: none) and each other
        one this subject gives."""
        data = handler(self)
        if isinstance(data, dict):
            present = [name for name, item in registry.sections().items() if item.subject and item.present]
            for name in dict.fromkeys([*present, *self._engines]):
                if not dumped(name, info, self.model_fields_set):
                    continue
                value = dict(self._engines.get(name, {}))
                if value or not info.exclude_defaults:
                    data[name] = value
        return data

    def engine(self, section: str) -> dict[str, Any]:
        """The keys of ``section`` this subject sets (none: ``{}``)."""
        return dict(self._engines.get(section, {}))

    @field_validator("name")
    @classmethod
    def _not_a_model_name(cls, name: str) -> str:
        if name == "bundled":
            raise ValueError("'bundled' names the bundled model; give the subject another name")
        return name

    def overrides(self) -> dict[str, Any]:
        """What this subject sets over the experiment: top-level keys, and engine keys by section."""
        found: dict[str, Any] = {"model": self.model}
        for key in ("system_prompt", "chat_template"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        for section, keys in self._engines.items():
            found[section] = dict(keys)
        return found

    def override_fields(self) -> list[str]:
        """The dotted config fields this subject sets (``model``, ``llamacpp.n_batch``)."""
        fields: list[str] = []
        for key, value in self.overrides().items():
            if isinstance(value, dict):
                fields.extend(f"{key}.{inner}" for inner in value)
            else:
                fields.append(key)
        return fields
