"""YAML that users give (experiment files, rename maps, shipped case data), read strictly: a key
written twice in one mapping is bad input naming ``file:line`` and the key, never "the last one wins"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode

from rotscope._util.decode import read_text
from rotscope.errors import BadInput

__all__ = ["StrictLoader", "load_yaml", "read_yaml"]


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key: object, line: int) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.line = line


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated within one mapping (merge keys ``<<`` aside)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            if repeated:
                raise _DuplicateKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, source: str) -> Any:
    """Parse ``text`` strictly; a duplicate key or malformed YAML is ``BadInput`` naming ``source``."""
    try:
        return yaml.load(text, Loader=StrictLoader)
    except _DuplicateKey as error:
        raise BadInput(f"{source}:{error.line}: duplicate key {error.key!r}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise BadInput(f"{source}: malformed YAML{where}") from None


def read_yaml(path: Path) -> Any:
    """A YAML file read as UTF-8 and parsed strictly; each problem is ``BadInput`` naming the file."""
    return load_yaml(read_text(path), str(path))
