"""What an option field says about itself: markers declared on the pydantic fields of the
experiment file's sections (``Annotated[str | None, PathOption()]``), read by walking the models.

``PathOption``: the field holds a path (or glob), made absolute against the experiment file's
folder when the file is read (``resolve_marked_paths``; ``rotscope.config.experiment.resolve_paths``), so the
config stored in a run folder names the same files wherever it is read from.

``RuntimeOption``: the field says how a run is executed or judged, never what it answers, so it is
left out of the run's identity (``runtime_keys``; ``rotscope.execution.state.identity``) and ``--resume``
may change it. Marked on a top-level field it leaves out the whole field; marked on a field of a
top-level section it leaves out that key of the section. A section nested in another (the judge's
``remote``) is part of the identity whole, whatever its fields say.

A component's options class marks its own fields; no central table lists them. An outside
component's own section (``rotscope.registry.register_section``, a top-level key of the experiment
file) is walked as a built-in section is: its ``PathOption`` fields resolved, its ``RuntimeOption``
fields left out of the identity (the mapping ``runtime_keys`` gives for a model that takes outside
sections, ``SectionSpec.takes_sections``, reads the registered sections each time it is read). The built-in
components' sections (``llamacpp``, ``remote``, ``reasoning``...) are registered the same way, through
the ``rotscope.sections`` entry points, and walked with them (``registered_sections``).

``SectionOf``: a field holding another section's mapping (the judge's own ``remote``), validated,
resolved and documented by the class registered for that section.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from rotscope import registry
from rotscope.config.spec import section_spec
from rotscope.errors import BadInput


def absolute(value: object, base: Path) -> object:
    """A relative path (or glob pattern) made absolute against ``base``; anything else unchanged."""
    if not isinstance(value, str) or not value:
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    return os.path.normpath(base.resolve() / path)


@dataclass(frozen=True)
class PathOption:
    """Marks a field holding a path, resolved against the experiment file's folder.

    ``keep``: values that name something rather than a file (``generated``), kept as written;
    ``keep_prefix``: values starting with it are kept (``tiktoken:NAME``); ``resolve``: a function
    of its own for a value that is a path only in some of its forms (a model spec); ``by_content``:
    the plan manifest's digest field (``GROUP.KEY``, e.g. ``cases.digest``) that covers the file's
    content, so a frozen plan compares the path by that digest, not by where the file lies
    (``content_keys``; ``rotscope.plan.manifest.paths_by_content``)."""

    keep: tuple[str, ...] = ()
    keep_prefix: str | None = None
    resolve: Callable[[object, Path], object] | None = None
    by_content: str | None = None

    def resolved(self, value: object, base: Path) -> object:
        if isinstance(value, str) and (
            value in self.keep or (self.keep_prefix is not None and value.startswith(self.keep_prefix))
        ):
            return value
        return (self.resolve or absolute)(value, base)


@dataclass(frozen=True)
class RuntimeOption:
    """Marks a field that says how a run is executed, never what it answers: outside the identity."""


@dataclass(frozen=True)
class SectionOf:
    """Marks a field whose value is a mapping of the registered section ``name`` (the judge's own
    ``remote``): validated by that section's class (``validate``, an ``AfterValidator``), its paths
    resolved and its keys documented as that section's are."""

    name: str

    def model(self) -> type[BaseModel]:
        section = registry.sections().get(self.name)
        if section is None or not issubclass(section.model, BaseModel):
            raise BadInput(f"no options section {self.name!r} is registered")
        return section.model

    def validate(self, value: object) -> BaseModel:
        return self.model().model_validate(value)

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        return handler(self.model().__pydantic_core_schema__)


_Marker = TypeVar("_Marker", PathOption, RuntimeOption, SectionOf)


def marker(field: FieldInfo, kind: type[_Marker]) -> _Marker | None:
    """The field's marker of ``kind``, if it declares one."""
    return next((item for item in field.metadata if isinstance(item, kind)), None)


def field_models(field: FieldInfo) -> Iterator[type[BaseModel]]:
    """The models a field's value may be: its annotation's (``section_models``), or the class of
    the section it is marked ``SectionOf``."""
    referred = marker(field, SectionOf)
    if referred is not None:
        yield referred.model()
    else:
        yield from section_models(field.annotation)


def registered_sections(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The sections registered for a model that takes them (``SectionSpec.takes_sections``), by key:
    the built-in ones and the outside ones known now; none for any other model."""
    if not section_spec(model).takes_sections:
        return {}
    return {
        name: section.model
        for name, section in registry.sections().items()
        if isinstance(section.model, type) and issubclass(section.model, BaseModel)
    }


def without_unset_later_sections(model: type[BaseModel], dumped: dict[str, Any]) -> dict[str, Any]:
    """``dumped`` (a JSON dump of a ``model`` config) without the sections that count only once set
    (``SectionSpec.identity_when_set``: added after run identities and plans were first frozen)
    left at their defaults, nor a subject's empty override of one, so a config that never names
    such a section keeps the digest and the plan it had before the section existed."""
    later = {
        name: section
        for name, section in registered_sections(model).items()
        if section_spec(section).identity_when_set
    }
    for name, section in later.items():
        if name in dumped and dumped[name] == section().model_dump(mode="json"):
            dumped.pop(name)
    subjects = dumped.get("subjects")
    if isinstance(subjects, list):
        dumped["subjects"] = [
            {key: value for key, value in subject.items() if not (key in later and value == {})}
            if isinstance(subject, dict)
            else subject
            for subject in subjects
        ]
    return dumped


def claimed_sections(keys: list[str], *, subject: bool = False) -> dict[str, type[BaseModel]]:
    """The section classes of those ``keys`` that a registered section claims (``subject``: only
    those a subject may override); the outside components' modules are imported only when one of
    ``keys`` is not registered yet (``registry.load_outside``)."""
    if not keys:
        return {}
    known = registry.sections()
    if any(key not in known for key in keys):
        registry.load_outside()
        known = registry.sections()
    found: dict[str, type[BaseModel]] = {}
    for key in keys:
        section = known.get(key)
        if section is None or (subject and not section.subject):
            continue
        if not (isinstance(section.model, type) and issubclass(section.model, BaseModel)):
            raise BadInput(f"{key}: the options section of {section.module} is not a pydantic model")
        found[key] = section.model
    return found


def section_models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The models a field's value may be (itself or a member of its union; not list items or
    mapping values)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    elif get_origin(annotation) in (Union, types.UnionType):
        for member in get_args(annotation):
            yield from section_models(member)


def resolve_marked_paths(model: type[BaseModel], data: dict[str, Any], base: Path) -> dict[str, Any]:
    """``data`` (a mapping ``model`` will validate) with each ``PathOption`` field's value resolved
    against ``base``, in nested sections too; a copy, the input unchanged. A value of the wrong
    shape is left for validation to name."""
    data = dict(data)
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in data:
            continue
        path = marker(field, PathOption)
        if path is not None:
            data[key] = path.resolved(data[key], base)
            continue
        for section in field_models(field):
            if isinstance(data[key], dict):
                data[key] = resolve_marked_paths(section, data[key], base)
    return data


def path_keys(model: type[BaseModel], prefix: str = "", seen: tuple[type[BaseModel], ...] = ()) -> list[str]:
    """The dotted keys of every ``PathOption`` field, nested sections included (a model nested in
    itself, such as the session filler's ``static``, is entered once more), and those of the
    registered sections of a model that takes them."""
    found: list[str] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        if marker(field, PathOption) is not None:
            found.append(key)
        branch = (*seen, model)
        for section in field_models(field):
            if branch.count(section) < 2:
                found.extend(path_keys(section, f"{key}.", branch))
    for name, section in registered_sections(model).items():
        found.extend(path_keys(section, f"{prefix}{name}.", (*seen, model)))
    return found


def content_keys(model: type[BaseModel], prefix: str = "", *, top: bool = True) -> dict[str, str]:
    """The dotted keys of every ``PathOption`` field declaring ``by_content``, each with its digest
    field: ``model``'s own fields, those of its sections, and once more those of a section nested in
    itself (the session filler's ``static``). Any other nested section (the judge's ``remote``) is
    compared as it is: no digest of the manifest covers its files. The registered sections of a
    model that takes them count as its own sections."""
    found: dict[str, str] = {}
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        path = marker(field, PathOption)
        if path is not None and path.by_content is not None:
            found[key] = path.by_content
        for section in section_models(field.annotation):
            if top or (section is model and prefix.count(".") < 2):
                found.update(content_keys(section, f"{key}.", top=False))
    if top:
        for name, section in registered_sections(model).items():
            found.update(content_keys(section, f"{prefix}{name}.", top=False))
    return found


class _WithOutside(Mapping[str, frozenset[str]]):
    """The runtime keys of a model's own sections, and those of the sections registered now,
    built-in and outside (read on each access: a section registered after the model's keys were
    taken counts)."""

    def __init__(self, own: dict[str, frozenset[str]], model: type[BaseModel]) -> None:
        self._own = own
        self._model = model

    def _all(self) -> dict[str, frozenset[str]]:
        registered = {
            name: keys
            for name, section in registered_sections(self._model).items()
            if (keys := runtime_fields(section))
        }
        return {**registered, **self._own}

    def __getitem__(self, key: str) -> frozenset[str]:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def runtime_fields(model: type[BaseModel]) -> frozenset[str]:
    """The keys of ``model``'s own fields marked ``RuntimeOption``."""
    return frozenset(
        field.alias or name
        for name, field in model.model_fields.items()
        if marker(field, RuntimeOption) is not None
    )


@cache
def runtime_keys(model: type[BaseModel]) -> tuple[frozenset[str], Mapping[str, frozenset[str]]]:
    """The ``RuntimeOption`` fields of ``model``: its top-level ones, and by section those of its
    top-level sections (see the module docstring), outside sections included for a model whose
    ``SectionSpec.takes_sections`` is true."""
    top: set[str] = set()
    sections: dict[str, frozenset[str]] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if marker(field, RuntimeOption) is not None:
            top.add(key)
            continue
        inner = {
            inner_field.alias or inner_name
            for section in section_models(field.annotation)
            for inner_name, inner_field in section.model_fields.items()
            if marker(inner_field, RuntimeOption) is not None
        }
        if inner:
            sections[key] = frozenset(inner)
    if section_spec(model).takes_sections:
        return frozenset(top), _WithOutside(sections, model)
    return frozenset(top), sections
