"""An experiment's identity: what its results depend on, so that ``--resume`` never mixes two
experiments in one run folder.

The identity is every config field except those that only say how a run is executed or judged
(``RUNTIME_FIELDS``, ``SECTION_RUNTIME_FIELDS``: the fields marked ``RuntimeOption`` on the config's
models and on the registered sections' classes, built-in and outside, read live; see
``rotscope.config.options``), plus the digests of the model file, its tokenizer
and its chat template: editing ``model``, ``lengths`` or ``seed`` in ``DIR/config.yaml``, or
replacing the GGUF file behind the same path, is refused on resume, naming the first changed field.

llama.cpp's ``n_batch`` is part of the identity: the batch size decides how a prompt is split into
prefill chunks and which matrix kernels evaluate them, so it can change the logits in their last
bits and with them a greedy answer (128, 256 and 512 gave identical replies on the frozen quick
grid, but that is one grid), so it is never tuned per machine. ``n_threads`` splits the
same operations over cores without changing them; ``prefix_cache`` and ``state_cache_mb`` only
skip evaluations whose results are kept (the correctness guard and tests/flows/test_cache_control.py
hold them equal); ``extra_buffers``
changes the engine mode, and the runner already runs again every call answered in another mode.
The same holds for the hf backend's ``n_threads`` and ``prefix_cache``; its ``device`` and ``dtype``
change the arithmetic, so they are part of the identity.

A subject's run (``subjects:``, ``rotscope.config.subjects``) stores its own definition in ``subjects`` and
its name in ``subject``, both config fields of the identity: every override the subject carries is
part of that run's identity, a runtime engine option (``n_threads``) too, and the other subject's
definition is not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from rotscope.config.experiment import ExperimentConfig, build_config
from rotscope.config.options import runtime_keys, without_unset_later_sections
from rotscope.config.sections import as_before_decoding_keys
from rotscope.errors import BadInput

_TOP_RUNTIME, SECTION_RUNTIME_FIELDS = runtime_keys(ExperimentConfig)
RUNTIME_FIELDS: set[str] = set(_TOP_RUNTIME)
"""Top-level fields that change how a run is executed or judged, not its results (``out``,
``cache``, ``limits``, ``order``...), and by section the engine options that cannot change an answer
(see the module docstring): left out of its identity, so ``--resume`` may change them. ``order``
decides when each call is sent, never what it sends; a command's time limit and retries only decide
whether a call ends in an error row, which ``--resume`` runs again; a server's log only says what it
kept. Each is declared on its field (``RuntimeOption``), not listed here."""
DIGESTS = {"model": "model_digest", "tokenizer": "tokenizer_digest", "template": "template_digest"}
"""The identity's ``digests`` section: its names and the backend description keys they come from."""
_ABSENT = object()


def config_fields(config: ExperimentConfig) -> dict[str, Any]:
    """The config part of the identity, in the config's field order."""
    fields = without_unset_later_sections(
        ExperimentConfig, config.model_dump(mode="json", exclude=RUNTIME_FIELDS)
    )
    for section, names in SECTION_RUNTIME_FIELDS.items():
        if isinstance(fields.get(section), dict):
            fields[section] = {key: value for key, value in fields[section].items() if key not in names}
    if fields.get("score") is None:
        fields.pop("score", None)  # unset keeps the digest and plans of runs from before scores
    if not fields.get("inject"):
        fields.pop("inject", None)  # no fault keeps the digest of runs from before faults
    return as_before_decoding_keys(fields)


def config_digest(config: ExperimentConfig) -> str:
    """A short fingerprint of the config part of the identity (run metadata, messages)."""
    return hashlib.sha256(json.dumps(config_fields(config), sort_keys=True).encode()).hexdigest()[:16]


def identity_fields(config: ExperimentConfig) -> dict[str, Any]:
    """The config part of a run folder's identity: ``config_fields`` with ``generation.stop`` and
    ``generation.max_tokens`` always named as set (the digest reads today's defaults as before the
    keys, but a folder begun with replies decoded to their end must not be resumed with early
    stops, nor one begun with budgets per answer kind with one budget, nor the reverse)."""
    fields = config_fields(config)
    generation = fields.get("generation")
    if isinstance(generation, dict):
        fields["generation"] = {
            **generation,
            "max_tokens": config.generation.max_tokens,
            "stop": config.generation.stop,
        }
    return fields


def experiment_identity(config: ExperimentConfig, description: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of ``config`` run on the backend that ``description`` (``describe()``) names."""
    digests = {name: description.get(key) for name, key in DIGESTS.items()}
    return {**identity_fields(config), "digests": digests}


def stored_identity(meta: Mapping[str, Any]) -> tuple[dict[str, Any], bool] | None:
    """The identity a run folder was started with, and whether it was read strictly.

    Its config part is read again with today's config model, so a field added since (at its
    default, which keeps the old behaviour) compares equal; when that fails (a field was removed
    since) it is compared as stored, passing keys that only one side has. A folder from before
    identities were stored gives the identity of its stored config (no digests); ``None`` when
    even that is missing (the caller then compares ``config_digest``)."""
    stored = meta.get("identity")
    if not isinstance(stored, dict):
        stored = meta.get("config")
        if not isinstance(stored, dict):
            return None
        stored = {key: value for key, value in stored.items() if key not in RUNTIME_FIELDS}
    fields = before_stop(before_variants({key: value for key, value in stored.items() if key != "digests"}))
    digests = {"digests": stored["digests"]} if "digests" in stored else {}
    try:
        return {**identity_fields(build_config(fields)), **digests}, True
    except BadInput:
        return dict(stored), False


def before_variants(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run folder's config (or identity) written before haystack variants: the run had one
    haystack, so its filler reads as ``variants: 1``, not today's default (a folder's config is
    written with every key, so only an older rotscope leaves that one out)."""
    filler = data.get("filler", {})
    if isinstance(filler, dict) and "variants" not in filler:
        return {**data, "filler": {**filler, "variants": 1}}
    return dict(data)


def before_stop(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run folder's config (or identity) written before ``generation.stop``: its replies ran to
    their end, so it reads as ``stop: end``, not today's default (``answer``), and ``--resume`` goes
    on as it began."""
    generation = data.get("generation", {})
    if isinstance(generation, dict) and "stop" not in generation:
        return {**data, "generation": {**generation, "stop": "end"}}
    return dict(data)


def first_change(old: Any, new: Any, path: str = "", *, strict: bool = True) -> tuple[str, Any, Any] | None:
    """``(dotted path, old, new)`` of the first difference, in ``old``'s order; unless ``strict``,
    keys that only one side has are passed (fields another rotscope version added or removed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(key for key in new if key not in old)]:
            if not strict and (key not in old or key not in new):
                continue
            where = f"{path}.{key}" if path else str(key)
            found = first_change(old.get(key, _ABSENT), new.get(key, _ABSENT), where, strict=strict)
            if found is not None:
                return found
        return None
    return None if old == new else (path, old, new)


def check_identity(meta: Mapping[str, Any], identity: Mapping[str, Any], digest: str, where: str) -> None:
    """Refuse to resume a run folder whose experiment is not ``identity``: bad input naming the
    first changed field with its old and new values."""
    found_stored = stored_identity(meta)
    if found_stored is None:
        if meta.get("config_digest") not in (None, digest):
            raise BadInput(
                f"{where}: the experiment changed since the run began (config digest "
                f"{meta['config_digest']} -> {digest}); a run folder holds one experiment: undo the "
                "change, or run it with another --out"
            )
        return
    stored, strict = found_stored
    if "digests" not in stored:  # a folder from before identities: only its config is known
        identity = {key: value for key, value in identity.items() if key != "digests"}
    found = first_change(stored, dict(identity), strict=strict)
    if found is None:
        return
    field, old, new = found
    raise BadInput(
        f"{where}: {field} changed from {_shown(old)} to {_shown(new)} since the run began; a run folder "
        "holds one experiment: undo the change, or run the new experiment with another --out"
    )


def _shown(value: Any) -> str:
    return "(not set)" if value is _ABSENT else json.dumps(value)
