"""What a shared view may show of a run: models by a name a person recognises, and no absolute path
of the machine the run was made on (a username would leak into every report and PR comment).

The run store and the summary JSON keep the full paths; only the views pass through here.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.config.experiment import BUNDLED_MODEL
from rotscope.records.summary import Summary

DIGEST_CHARS = 8
ELIDED = "…"
_ABSOLUTE_PATH = re.compile(
    # An absolute POSIX path: a "/" that starts a word (not inside a URL or a relative path;
    # "text:/home/..." is one), or the one after a provider's "name/" (llamacpp//home/...), then
    # at least one folder.
    r"(?:(?<![\w./~-])|(?<=\w/))/(?:[^\s/'\"<>]+/)+[^\s/'\"<>]*"
)


def _last_part(match: re.Match[str]) -> str:
    return f"{ELIDED}/{PurePosixPath(match.group(0)).name}"


def without_paths(value: Any) -> Any:
    """``value`` with each absolute path in its strings shortened to ``…/<last part>``."""
    if isinstance(value, str):
        return _ABSOLUTE_PATH.sub(_last_part, value)
    if isinstance(value, dict):
        return {key: without_paths(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_paths(item) for item in value]
    return value


def _is_absolute(path: str) -> bool:
    return path.startswith(("/", "~")) or bool(re.match(r"[A-Za-z]:[\\/]", path))


def model_name(model: str | None, configured: str | None = None, digest: str | None = None) -> str:
    """``llamacpp/SmolLM2-135M-Instruct.Q4_1 (747cb1f0)`` for a model file named by its path (the
    file's stem and a short digest of its contents), ``bundled (SmolLM2-135M-Instruct.Q4_1)`` for
    the default model, any other id as it is (``openai/gpt-4o``, ``fake/lexical``)."""
    if not model:
        return "unknown model"
    provider, separator, rest = model.partition("/")
    if _is_absolute(model):
        provider, rest = "", model
    elif not (separator and _is_absolute(rest)):
        return model
    name = re.split(r"[\\/]", rest.rstrip("\\/"))[-1]
    name = name.removesuffix(".gguf")
    if configured == BUNDLED_MODEL:
        return f"{BUNDLED_MODEL} ({name})"
    short = f" ({digest[:DIGEST_CHARS]})" if digest else ""
    return f"{provider}/{name}{short}" if provider else f"{name}{short}"


def summary_model_name(summary: Summary) -> str:
    """The recognisable name of a summary's model."""
    configured = (summary.config or {}).get("model")
    digest = (summary.backend or {}).get("model_digest")
    return model_name(summary.model, configured, digest)


def shareable(summary: Summary) -> Summary:
    """A copy of a summary for a view: the model by its recognisable name, no absolute path."""
    name = summary_model_name(summary)
    shown: dict[str, Any] = without_paths(summary.model_dump())
    shown["model"] = name
    overhead = summary.token_counts.overhead
    if overhead is not None and overhead.model == summary.model:
        shown["token_counts"]["overhead"]["model"] = name
    return Summary.model_validate_json(json.dumps(shown))


def terminal_safe_summary(summary: Summary) -> Summary:
    """A copy of a summary with every text in it ``terminal_safe``, for a view a terminal prints."""
    return Summary.model_validate_json(json.dumps(terminal_safe_tree(summary.model_dump())))
