"""What every record model shares: strict types, unknown keys refused, each field's attribute
docstring its description (in the generated schema and the docs' key tables)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Count = Annotated[int, Field(ge=0)]
"""A count: a whole number, 0 or more."""
Length = Annotated[int, Field(ge=1)]
"""A prompt length in model tokens."""
Share = Annotated[float, Field(ge=0, le=1)]
"""A proportion in [0, 1]."""
Gap = Annotated[float, Field(ge=-1, le=1)]
"""A difference of two proportions, in [-1, 1]."""


class Record(BaseModel):
    """A part of a record rotscope writes: strict (an int is no string, a bool no int) and closed
    (a key the model does not name is an error)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The record as written (``json.loads`` of its JSON): a key its builder never set stays out,
        as an absent key and a null one differ in a record (docs/records.md); ``exclude_unset=False``
        gives every field."""
        options.setdefault("exclude_unset", True)
        return super().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        """``model_dump``'s record as JSON text."""
        options.setdefault("exclude_unset", True)
        return super().model_dump_json(**options)


class OpenRecord(Record):
    """A part whose keys beyond the named ones come from elsewhere (a component, the run's own
    metadata) and are kept as they are."""

    model_config = ConfigDict(extra="allow")
