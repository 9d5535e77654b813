"""The roles an evidence piece may have: registered names, each placed by one of the layout's rules.

A role is what a piece of the haystack is to its case (``Evidence.role``): the ``answer`` piece that
completes the answer, a ``support`` piece, a ``decoy`` that cannot establish it, a ``superseded``
value, a ``spread`` piece of a region. Where a piece goes is its role's ``Placement``:

- ``grid``: at the grid's depth (``answer``);
- ``rule``: by the experiment's placement rule around the grid's depth (``support``);
- ``seeded``: at independent seeded depths away from it (``decoy``);
- ``before``: somewhere before the grid's depth (``superseded``);
- ``spread``: evenly, in listed order, over the region the grid's depth names (``spread``).

An outside task family that names its pieces otherwise registers its role from its own module,
``register_role("distractor", placement="seeded")``, before its cases are planned; nothing in
rotscope lists it. It sits in the bottom layer so the prompt step (``prompt.placement``,
``prompt.verify``) and the families read one table without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rotscope.errors import BadInput

Placement = Literal["grid", "rule", "seeded", "before", "spread"]
"""How the pieces of a role are placed (the module's docstring)."""


@dataclass(frozen=True)
class RoleInfo:
    """What a role registers: its ``placement`` and the module that registered it."""

    placement: Placement
    module: str


_ROLES: dict[str, RoleInfo] = {}


def register_role(name: str, *, placement: Placement, module: str | None = None) -> str:
    """Register the evidence role ``name``, placed by ``placement``; returns ``name``. Registering a
    name again with the same placement is a no-op; with another placement it is one line of bad
    input naming both."""
    known = _ROLES.get(name)
    if known is not None:
        if known.placement != placement:
            raise BadInput(
                f"evidence role {name!r}: placed {placement!r} by {module or '?'}, but already "
                f"registered as {known.placement!r} by {known.module}"
            )
        return name
    _ROLES[name] = RoleInfo(placement, module or "?")
    return name


def placement_of(name: str) -> Placement | None:
    """The placement of role ``name``; ``None`` for a role nobody registered (a reader that only
    looks, such as a view or an exported case, treats such a piece as none of the built-ins')."""
    info = _ROLES.get(name)
    return None if info is None else info.placement


def check_role(name: str, where: str = "evidence") -> Placement:
    """The placement of role ``name``; an unknown role is bad input naming the known ones."""
    placement = placement_of(name)
    if placement is None:
        raise BadInput(
            f"{where}: unknown evidence role {name!r} (known: {', '.join(sorted(_ROLES))}; "
            "a task family registers its own with rotscope.evidence_roles.register_role)"
        )
    return placement


def roles() -> dict[str, Placement]:
    """Every registered role and its placement, in the order registered."""
    return {name: info.placement for name, info in _ROLES.items()}


_BUILT_IN: tuple[tuple[str, Placement], ...] = (
    ("answer", "grid"),
    ("support", "rule"),
    ("decoy", "seeded"),
    ("superseded", "before"),
    ("spread", "spread"),
)
for _name, _placement in _BUILT_IN:
    register_role(_name, placement=_placement, module=__name__)
