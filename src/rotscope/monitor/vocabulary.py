"""The monitoring store's closed labels: a declared vocabulary per dimension, and the store's salt.

A label reaches the store only as a value its dimension declares (``Vocabulary``), or, when the
user asks for it (``--hash-labels``), as the keyed hash of the value under the store's salt
(``LabelPolicy.label``); a further dimension's name must be declared too. A ``cluster_id`` is
re-hashed with the same salt (``LabelPolicy.cluster``), so a hex-encoded text never lands as given.

The vocabulary is set in a monitor config file (``--labels FILE``: ``dimensions: {NAME: [VALUE,
...]}``), stored in the store's ``meta`` table, and only ever extended: a later file's declaration
is added to the stored one. ``language`` (ISO 639-1 codes) and ``risk`` (``low``, ``medium``,
``high``) come declared. The threat model is in docs/monitor.md ("What the allow-list can and
cannot keep out")."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.monitor.schema import LABEL, LABEL_FIELDS, LABEL_NAME, MAX_LABELS, TEXT_FIELDS, Refused

MAX_VALUES = 256
"""Values one dimension may declare: a label then carries at most 8 bits."""
MAX_CONFIG_BYTES = 1 << 20
"""The largest monitor config file read."""
HASHED_LABEL = "h:"
"""The prefix of a hashed label's value (``h:`` and 16 hex digits)."""

_ISO_639_1 = (
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da "
    "de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz "
    "ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln "
    "lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi "
    "pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti "
    "tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
)
BUILT_IN: Mapping[str, frozenset[str]] = {
    "language": frozenset(_ISO_639_1.split()),
    "risk": frozenset(("low", "medium", "high")),
}
"""What every store declares without a config: ISO 639-1 language codes and three risk levels."""


@dataclass(frozen=True)
class Vocabulary:
    """The declared values of each dimension (the known label fields and further dimensions)."""

    dimensions: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def with_built_in(self) -> Vocabulary:
        return self.merged(Vocabulary(BUILT_IN))

    def merged(self, other: Vocabulary) -> Vocabulary:
        """Both declarations together (a declaration only ever adds), checked against the caps."""
        names = {*self.dimensions, *other.dimensions}
        merged = Vocabulary(
            {
                name: self.dimensions.get(name, frozenset()) | other.dimensions.get(name, frozenset())
                for name in sorted(names)
            }
        )
        merged.check_caps()
        return merged

    def check_caps(self) -> None:
        further = [name for name in self.dimensions if name not in LABEL_FIELDS]
        if len(further) > MAX_LABELS:
            raise BadInput(f"--labels: the vocabulary would hold more than {MAX_LABELS} further dimensions")
        for name, values in self.dimensions.items():
            if len(values) > MAX_VALUES:
                raise BadInput(f"--labels: dimension {name!r} would declare more than {MAX_VALUES} values")

    def to_json(self) -> str:
        return json.dumps({name: sorted(values) for name, values in sorted(self.dimensions.items())})

    @classmethod
    def from_json(cls, text: str | None) -> Vocabulary:
        if not text:
            return cls()
        return cls({name: frozenset(values) for name, values in json.loads(text).items()})


def read_vocabulary(path: Path) -> Vocabulary:
    """A monitor config file (YAML or JSON: ``dimensions: {NAME: [VALUE, ...]}``) checked: every
    name a dimension's name (not a text field's), every value a label, within the caps."""
    import yaml

    try:
        if not path.is_file():
            raise BadInput(f"--labels: {path}: no such file")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise BadInput(f"--labels: {path}: larger than {MAX_CONFIG_BYTES // 1024} KiB")
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        raise BadInput(f"--labels: {path}: not a readable YAML file") from None
    if not isinstance(data, dict) or set(data) != {"dimensions"} or not isinstance(data["dimensions"], dict):
        raise BadInput(f"--labels: {path}: must hold one key, dimensions: {{NAME: [VALUE, ...]}}")
    dimensions: dict[str, frozenset[str]] = {}
    for name, values in data["dimensions"].items():
        if not isinstance(name, str) or not LABEL_NAME.fullmatch(name) or name in TEXT_FIELDS:
            raise BadInput(f"--labels: {path}: a dimension name that is not a short lower-case label")
        if not isinstance(values, list) or not values:
            raise BadInput(f"--labels: {path}: dimension {name!r} must list its values")
        if not all(isinstance(value, str) and LABEL.fullmatch(value) for value in values):
            raise BadInput(
                f"--labels: {path}: dimension {name!r}: every value a label "
                "(at most 32 characters of A-Z a-z 0-9 _ . : -)"
            )
        dimensions[name] = frozenset(values)
    vocabulary = Vocabulary(dimensions)
    vocabulary.check_caps()
    return vocabulary


@dataclass(frozen=True)
class LabelPolicy:
    """How an ingest maps a checked record's labels and ``cluster_id`` onto what is stored."""

    vocabulary: Vocabulary
    salt: bytes
    hash_labels: bool = False

    def dimension(self, name: str) -> None:
        """A further dimension's name: refused unless declared (the name is not shown)."""
        if name not in self.vocabulary.dimensions:
            raise Refused(
                None, "a further dimension the store's label vocabulary does not declare (name not shown)"
            )

    def label(self, name: str, value: str) -> str:
        """``value`` (already a label's shape) as stored: itself where declared, its keyed hash
        with ``hash_labels``; refused otherwise (the value is not shown)."""
        if value in self.vocabulary.dimensions.get(name, ()):
            return value
        if self.hash_labels:
            return HASHED_LABEL + hashlib.blake2b(value.encode(), key=self.salt, digest_size=8).hexdigest()
        raise Refused(name, "a value its declared vocabulary does not hold (declare it, or --hash-labels)")

    def cluster(self, value: str) -> str:
        """A ``cluster_id`` re-hashed under the store's salt: 32 lower-case hex digits."""
        return hashlib.blake2b(value.encode(), key=self.salt, digest_size=16).hexdigest()
