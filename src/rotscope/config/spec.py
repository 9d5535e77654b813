"""The public strict base of every options class (``StrictOptions``) and what an options section
declares about itself beyond its fields (``SectionSpec``), read typed by the registry (which
sections a subject overrides), the assembly (which model takes registered sections), the identity
(which sections count only once set) and the model spec's path forms.

Kept free of rotscope imports: ``rotscope.registry`` reads a section's spec, and the rest of
``rotscope.config`` imports the registry (ARCHITECTURE.md, "A component's own options")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

ModelNameForm = Literal["path", "path-or-command"]
"""How the model name after ``PROVIDER/`` is read, for the provider named like the section's key.
``path``: a file or folder, made absolute against the experiment file (``bundled`` stays the
bundled model); ``path-or-command``: a path where it holds a ``/``, else a command looked up on
``$PATH`` when run."""


@dataclass(frozen=True)
class SectionSpec:
    """What an options class declares about its section, once, as ``SECTION: ClassVar[SectionSpec]``.

    ``subject_overrides``: a subject (``subjects:``) may set its keys one by one (an engine's
    options). ``identity_when_set``: the section counts in a run's identity and a frozen plan only
    once set: at its defaults (and as a subject's empty override) it is left out, so a config that
    never names it keeps the digest and the plan it had before the section existed; the default for
    a new section (``rotscope.config.options.without_unset_later_sections``). ``model_name_form``:
    how the model name after ``PROVIDER/`` is read for the provider named like the section's key
    (``ModelNameForm``; unset: a name the provider knows, an API's model name). ``takes_sections``:
    the model holds the registered sections beside its fields as top-level keys, validated (the
    experiment file's model, ``rotscope.config.experiment.ExperimentConfig``);
    ``takes_overrides``: the model takes the keys of each section a subject may override, as
    mappings (a subject, ``rotscope.config.assembly.SubjectConfig``)."""

    subject_overrides: bool = False
    identity_when_set: bool = True
    model_name_form: ModelNameForm | None = None
    takes_sections: bool = False
    takes_overrides: bool = False


class StrictOptions(BaseModel):
    """The base of every options class, rotscope's and an outside component's: unknown keys are
    errors, values frozen, each field's attribute docstring its description (the reference needs
    one). ``SECTION`` declares the section's behaviour (``SectionSpec``); a subclass that declares
    none is a new section: counted in identities once set."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    SECTION: ClassVar[SectionSpec] = SectionSpec()
    """What the section declares about itself (``SectionSpec``)."""


UNDECLARED = SectionSpec(identity_when_set=False)
"""The spec of a class that is not ``StrictOptions`` (a plain pydantic model of an outside package
written before ``StrictOptions`` existed): what such a section always had, counted in the identity
as soon as the file gives it, never overridden by a subject."""


def section_spec(model: type) -> SectionSpec:
    """The spec ``model`` declares (``StrictOptions.SECTION``), else ``UNDECLARED``."""
    if issubclass(model, StrictOptions):
        return model.SECTION
    return UNDECLARED
