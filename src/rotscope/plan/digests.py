"""The digests a manifest records of what turns cases into prompts: the prompt-shaping code by
its modules' fingerprints (``assembler_digest``), the case set, and the chat template."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import importlib.util
import json
import pkgutil
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rotscope._version import __version__
from rotscope.types import Backend, Case

PROMPT_SHAPING = (
    "rotscope.prompt",
    "rotscope.filler",
    "rotscope.tasks",
    "rotscope.tokenizers",
    "rotscope.plan",
)
"""Every module of these packages takes part in turning cases into prompts (the plan package
too: work items, their filler streams and order), so each is in the assembler digest."""
_TEMPLATE_PROBE = ({"role": "system", "content": "S"}, {"role": "user", "content": "U"})


def short_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@functools.cache
def code_fingerprint(source: str) -> str:
    """A module's code without its imports, docstrings, comments and layout: moving a module (which
    rewrites the imports of others) leaves it unchanged, editing what the code does changes it.
    Kept per source text: every run's manifest digests the same modules, and parsing them is most of
    a small run's planning; a module whose text changes is parsed again."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            body[:] = [
                child
                for child in body
                if not isinstance(child, ast.Import | ast.ImportFrom) and not _is_docstring(child)
            ] or [ast.Pass()]
    return short_digest(ast.dump(tree, annotate_fields=False, include_attributes=False).encode())


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def prompt_shaping_sources() -> list[str]:
    """The source of every module in the ``PROMPT_SHAPING`` packages, found by walking them."""
    sources = []
    for name in PROMPT_SHAPING:
        package = importlib.import_module(name)
        inside = pkgutil.walk_packages(package.__path__, f"{name}.") if hasattr(package, "__path__") else ()
        found = [name, *(info.name for info in inside)]
        for module in found:
            spec = importlib.util.find_spec(module)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                sources.append(Path(spec.origin).read_text(encoding="utf-8"))
    return sources


def assembler_digest(sources: Iterable[str] | None = None) -> str:
    """The code that turns cases into prompts: the fingerprints of its modules, in no particular
    order (a module's name or place is not part of it), and the rotscope version."""
    prints = sorted(
        code_fingerprint(source) for source in (prompt_shaping_sources() if sources is None else sources)
    )
    return short_digest("\n".join([__version__, *prints]).encode())


def cases_digest(cases: list[Case]) -> str:
    """Every case's id, question, oracle and evidence bytes, in order. A control's ``Oracle.gold``
    (its case's answer readings) is left out: it is derived from the case's own oracle and evidence,
    already digested, and leaving it out keeps the digests of plans frozen before it existed; so are
    a saved failure's layout fields (``pin_depths``, ``haystack``) where a case has none."""
    return short_digest(canonical_json([_without_gold(asdict(case)) for case in cases]).encode())


_LATER_FIELDS = ("pin_depths", "haystack")
"""Case fields digested only where set, so the digests of cases without them stay as they were."""


def _without_gold(case: dict[str, Any]) -> dict[str, Any]:
    oracle = {key: value for key, value in case["oracle"].items() if key != "gold"}
    parts = [[label, _without_gold(part)] for label, part in case.get("parts", ())]
    kept = {key: value for key, value in case.items() if key not in _LATER_FIELDS or value}
    return {**kept, "oracle": oracle, "parts": parts}


def template_digest(backend: Backend, description: Mapping[str, Any]) -> str:
    """The backend's own template digest, else the digest of a probe conversation rendered by it."""
    stored = description.get("template_digest")
    if stored:
        return str(stored)
    return short_digest(backend.tokenizer().render_chat(list(_TEMPLATE_PROBE)).encode())
