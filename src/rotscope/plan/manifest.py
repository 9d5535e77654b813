"""The frozen analysis plan (pre-registration): a manifest of everything that decides a run's
numbers and how they will be judged, written before the run and checked against it.

A manifest is a JSON mapping of groups. The protocol groups (grid, seeds, decoding, analysis,
cases, filler) are what a baseline and a candidate must share; ``subject`` identifies what is
being tested (model, tokenizer, chat template, system prompt, assembler code, engine);
``planned`` counts the verified work items; ``config`` closes the list with the whole resolved
config, so no field escapes the check. Deviations are reported in this order. A plan frozen by an
earlier version is compared as today's code reads it (``read_as_today``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import ValidationError

from rotscope._version import __version__
from rotscope.config.experiment import ExperimentConfig, GateConfig
from rotscope.config.options import content_keys, without_unset_later_sections
from rotscope.config.sections import as_before_decoding_keys
from rotscope.errors import BadInput, write_output
from rotscope.plan.digests import (
    assembler_digest,
    canonical_json,
    cases_digest,
    short_digest,
    template_digest,
)
from rotscope.plan.slices import SliceKey as SliceKey  # gate.verdict's import of it
from rotscope.plan.slices import slice_shape
from rotscope.plan.workitems import Plan, select_cases
from rotscope.types import DEFAULT_MAX_TOKENS, Backend
from rotscope.types.manifest import Manifest, ManifestDecoding

MANIFEST_VERSION = 2
"""2: the assembler digest covers every prompt-shaping module by its code, not listed files."""
SHARED_GROUPS = ("grid", "seeds", "decoding", "analysis", "cases", "filler")
"""Groups a baseline and a candidate compared under one plan must have in common."""
PACING_FIELDS = {"out", "max_cost", "limits", "prices", "executor", "analysis"}
"""Config fields that decide where results go and how a run is paced and paid, not what it
measures: left out of the manifest, so a budget or rate limit can change without a deviation
(``analysis`` only decides how ``show`` summarises; the gate has its own frozen section)."""
UNSET_LEFT_OUT = ("subjects", "subject", "chat_template", "inject")
"""Config keys added after manifest version 2 that the manifest leaves out while unset, so a plan
frozen before them reads as the same plan."""


class UnreadGateSettings(TypedDict):
    """The gate settings no test of today's gate reads, at today's values."""

    interval: str
    resamples: int
    bootstrap_seed: int


UNREAD_GATE_SETTINGS: UnreadGateSettings = {"interval": "adjusted-t", "resamples": 4000, "bootstrap_seed": 0}
"""Gate settings that no test of today's gate reads: a plan frozen before the adjusted-t tests
stored the per-slice bootstrap's interval and draws, and the gate judges it with today's tests (its
record says so), so a stored value of these is read as today's and is no deviation."""
LATER_COUNTS = ("slices", "instances_per_slice", "clusters")
"""``planned`` counts that a plan frozen before the pooled tests (it has no ``clusters``) made
otherwise: its slices did not put evidence-only items at length 0 nor cross the slice fields. They
are derived from the planned items, which the other groups and ``work_items`` pin, so under such a
plan they are not compared."""
UPGRADE_FIELDS = ("subject.assembler_digest", "subject.rotscope_version")
"""What a rotscope upgrade changes in a subject, whatever the subject: the prompt-shaping code and
the version. A paired session assembles both subjects with the same installed code, so there it is
accepted for the baseline (``rotscope.modes.intended``); a single run under the plan
refuses it."""
UPGRADE_HINT = (
    "rotscope changed since the plan was frozen: run both subjects under it with --pair "
    "(one installed assembler for both), or freeze the plan again"
)
CONTENT_KEYS = content_keys(ExperimentConfig)
"""The config's dotted keys whose file a digest of the manifest covers, with that digest."""
PATH_PREFIX = re.compile(r"[A-Za-z0-9_.-]+[/:]")
"""What may stand before a path in a model name (``provider/PATH``) or a filler's description
(``kind:GLOB``), as ``rotscope.config.experiment.resolve_paths`` and ``describe_filler`` write them: a
component's registered name and its separator, whichever component it is (no list of them here)."""


def build_manifest(config: ExperimentConfig, plan: Plan, backend: Backend) -> Manifest:
    """The manifest of ``config`` as planned: digests, grid, seeds, decoding and analysis."""
    description = plan.backend
    tokenizer = backend.tokenizer()
    cases = select_cases(config)
    fields = without_unset_later_sections(
        ExperimentConfig, config.model_dump(mode="json", exclude=PACING_FIELDS)
    )
    for key in UNSET_LEFT_OUT:  # unset, as absent as in a plan frozen before the key existed
        if not fields.get(key):
            fields.pop(key, None)
    fields = as_before_decoding_keys(fields)
    return {
        "manifest_version": MANIFEST_VERSION,
        "grid": {
            "tasks": fields["tasks"],
            "lengths": fields["lengths"],
            "positions": fields["depths"],
            "repetitions": config.trials,
            "limit": config.limit,
            "controls": config.controls,
            "questions_per_prompt": config.questions_per_prompt,
            "placement": fields["placement"],
        },
        "seeds": {"layout": config.seed, "generation": config.generation.seed},
        "decoding": decoding_group(config, plan),
        "analysis": fields["gate"],
        "cases": {"digest": cases_digest(cases), "count": len(cases)},
        "filler": {"source": plan.corpus.get("source"), "digest": plan.corpus.get("digest")},
        "subject": {
            "model": plan.items[0].model if plan.items else backend.model_id,
            "backend": description.get("backend"),
            "model_digest": description.get("model_digest"),
            "tokenizer": tokenizer.name,
            "tokenizer_digest": description.get("tokenizer_digest") or tokenizer.digest(),
            "template_digest": template_digest(backend, description),
            "system_prompt_digest": None
            if config.system_prompt is None
            else short_digest(config.system_prompt.encode()),
            "assembler_digest": assembler_digest(),
            "rotscope_version": __version__,
            "engine": description.get("options"),
        },
        "planned": {
            "work_items": len(plan.items),
            "rejected_prompts": len(plan.rejected),
            **slice_shape(plan, config.gate.slice_fields),
        },
        "config": fields,
    }


def decoding_group(config: ExperimentConfig, plan: Plan) -> ManifestDecoding:
    """The plan's decoding: its temperature and the reply budget its items are sent, one
    (``max_tokens``: ``generation.max_tokens`` where set, else the largest of the items' budgets) and,
    where the budgets per answer kind give some item another than ``DEFAULT_MAX_TOKENS``, those per
    kind (``reply_budgets``: the largest budget of each kind's items). A plan whose items all have
    the one budget reads as a plan frozen before budgets per kind did."""
    budgets = [item.params.max_tokens for item in plan.items]
    given = config.generation.max_tokens
    decoding: ManifestDecoding = {
        "temperature": config.generation.temperature,
        "max_tokens": given if given is not None else max(budgets, default=DEFAULT_MAX_TOKENS),
    }
    if given is None and any(budget != DEFAULT_MAX_TOKENS for budget in budgets):
        per_kind: dict[str, int] = {}
        for item in plan.items:
            kind = item.case.oracle.kind
            per_kind[kind] = max(per_kind.get(kind, 0), item.params.max_tokens)
        decoding["reply_budgets"] = dict(sorted(per_kind.items()))
    return decoding


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    return short_digest(canonical_json(manifest).encode())


def write_manifest(manifest: Mapping[str, Any], path: Path) -> str:
    """Write the manifest as JSON; returns its digest."""
    write_output(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n", "plan")
    return manifest_digest(manifest)


def read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise BadInput(f"{path}: plan file not found")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{path}: not a plan written by rotscope plan ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("manifest_version") != MANIFEST_VERSION:
        raise BadInput(f"{path}: not a plan written by rotscope plan (manifest_version missing or unknown)")
    return manifest


@dataclass(frozen=True)
class Deviation:
    """One field whose value in the run differs from the frozen plan."""

    field: str
    planned: Any
    actual: Any

    def describe(self) -> str:
        hint = f" ({UPGRADE_HINT})" if self.field in UPGRADE_FIELDS else ""
        return f"{self.field}: plan {canonical_json(self.planned)}, run {canonical_json(self.actual)}{hint}"


def gate_as_today(settings: Any) -> Any:
    """A stored ``gate`` section as today's gate reads it: validated (an unset key at its default)
    with the settings no test reads (``UNREAD_GATE_SETTINGS``) at today's values; one that does not
    validate is left as stored, so it is compared as it is."""
    if not isinstance(settings, Mapping):
        return settings
    try:
        read = GateConfig.model_validate(settings)
    except ValidationError:
        return settings
    return read.model_copy(update=UNREAD_GATE_SETTINGS).model_dump(mode="json")


def by_content(value: Any, digest: str) -> Any:
    """``value`` with the absolute path it names (after a ``PATH_PREFIX``, if any) replaced by a
    placeholder naming the digest field that covers the file's content; anything else as it is."""
    if not isinstance(value, str):
        return value
    named = PATH_PREFIX.match(value)
    prefix = named.group(0) if named and os.path.isabs(value[named.end() :]) else ""
    if not prefix and not os.path.isabs(value):
        return value
    return f"{prefix}<content: {digest}>"


def _digested(manifest: Mapping[str, Any], group: str, key: str) -> bool:
    section = manifest.get(group)
    return isinstance(section, Mapping) and bool(section.get(key))


def paths_by_content(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with every path whose file's content one of its own digests covers read by that
    digest (``by_content``), so a plan frozen in one folder and a run in another (a checkout, a CI
    runner) name the same files while a changed file still deviates, at its digest. The config's
    covered paths are those whose ``PathOption`` names a digest (``by_content``; ``CONTENT_KEYS``):
    the cases file (``cases.digest``); the filler's files, or its static filler's when it has one
    (``filler.digest``: the haystack's bytes); the model (``subject.model_digest``, where the backend
    has one); the chat template (``subject.template_digest``); the subject's tokenizer file
    (``subject.tokenizer_digest``). The manifest's own groups: the subject's model and tokenizer,
    and the filler's description. Any other path (a replay, a judge's tokenizer, a command's folder,
    the session transcript beside a static filler) is compared as it is."""
    found = dict(manifest)
    model = _digested(found, "subject", "model_digest")
    filler = _digested(found, "filler", "digest")
    subject = found.get("subject")
    if isinstance(subject, Mapping):
        subject = dict(subject)
        if model and "model" in subject:
            subject["model"] = by_content(subject["model"], "subject.model_digest")
        if subject.get("tokenizer_digest") and "tokenizer" in subject:
            subject["tokenizer"] = by_content(subject["tokenizer"], "subject.tokenizer_digest")
        found["subject"] = subject
    if filler and isinstance(found.get("filler"), Mapping):
        found["filler"] = {
            **found["filler"],
            "source": by_content(found["filler"].get("source"), "filler.digest"),
        }
    config = found.get("config")
    if isinstance(config, Mapping):
        found["config"] = _config_by_content(found, config)
    return found


def _config_by_content(manifest: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's paths that declare a covering digest (``PathOption(by_content=...)``, read by
    ``rotscope.config.options.content_keys``) read by it where the manifest has that digest. The filler's
    digest is its static filler's haystack when it has one, so then only the static's paths are."""
    found = dict(config)
    filler = found.get("filler")
    static = isinstance(filler, Mapping) and isinstance(filler.get("static"), Mapping)
    for dotted, digest in CONTENT_KEYS.items():
        group, _, key = digest.partition(".")
        parts = dotted.split(".")
        if not _digested(manifest, group, key):
            continue
        if parts[0] == "filler" and static != (parts[1:2] == ["static"]):
            continue
        _replace_at(found, parts, digest)
    return found


def _replace_at(data: dict[str, Any], parts: list[str], digest: str) -> None:
    """``data``'s value at the key path ``parts`` read by ``digest`` (each mapping on the way
    copied); a path that is not there is left as it is."""
    head, rest = parts[0], parts[1:]
    if head not in data:
        return
    if not rest:
        data[head] = by_content(data[head], digest)
        return
    inner = data[head]
    if isinstance(inner, Mapping):
        inner = dict(inner)
        _replace_at(inner, rest, digest)
        data[head] = inner


def read_as_today(manifest: Mapping[str, Any], frozen: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` as today's code reads it, for a comparison with the plan ``frozen``: a path
    whose file's content a digest covers by that digest (``paths_by_content``), its gate settings as
    today's tests read them (``gate_as_today``: the ``analysis`` group and the config's ``gate``),
    and, where ``frozen`` predates today's slice counts, its ``planned`` group without them
    (``LATER_COUNTS``). A genuine change (grid, seeds, cases, decoding, margin, a file's content)
    still differs."""
    found = paths_by_content(manifest)
    if "analysis" in found:
        found["analysis"] = gate_as_today(found["analysis"])
    config = found.get("config")
    if isinstance(config, Mapping) and "gate" in config:
        found["config"] = {**config, "gate": gate_as_today(config["gate"])}
    planned, counted = found.get("planned"), frozen.get("planned")
    if isinstance(planned, Mapping) and not (isinstance(counted, Mapping) and "clusters" in counted):
        found["planned"] = {key: value for key, value in planned.items() if key not in LATER_COUNTS}
    return found


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def deviations(
    planned: Mapping[str, Any], actual: Mapping[str, Any], groups: tuple[str, ...] | None = None
) -> list[Deviation]:
    """Fields that differ, in the plan's order (fields only one side has count too), both sides read
    as today's code reads them (``read_as_today``), so a plan frozen by an earlier version deviates
    only where the run genuinely differs."""
    planned, actual = read_as_today(planned, planned), read_as_today(actual, planned)
    chosen = groups or tuple(dict.fromkeys([*planned, *actual]))
    found: list[Deviation] = []
    for group in chosen:
        left = dict(_flatten(planned.get(group), group))
        right = dict(_flatten(actual.get(group), group))
        for name in dict.fromkeys([*left, *right]):
            if left.get(name) != right.get(name):
                found.append(Deviation(name, left.get(name), right.get(name)))
    return found


def with_frozen_defaults(config: ExperimentConfig, frozen: Mapping[str, Any] | None) -> ExperimentConfig:
    """``config`` as the plan ``frozen`` resolved what it leaves unset where the default changed
    since: ``filler.variants`` (3 until one haystack per case became the default, issue 48; a plan
    frozen before variants had one haystack) and ``generation.max_tokens`` (one budget for every
    reply until budgets per answer kind, issue 53: a plan whose decoding names no ``reply_budgets``
    sent every item its ``max_tokens``). A config that sets the field keeps its value (and
    deviates where it differs)."""
    if frozen is None:
        return config
    config = _frozen_budget(config, frozen)
    if "variants" in config.filler.model_fields_set:
        return config
    filler = (frozen.get("config") or {}).get("filler")
    if not isinstance(filler, Mapping):
        return config
    variants = filler.get("variants", 1)
    if variants == config.filler.variants:
        return config
    return config.model_copy(update={"filler": config.filler.model_copy(update={"variants": variants})})


def _frozen_budget(config: ExperimentConfig, frozen: Mapping[str, Any]) -> ExperimentConfig:
    """``config`` with the reply budget every item had before budgets per answer kind
    (``DEFAULT_MAX_TOKENS``, the default then) where the config leaves it unset and ``frozen``
    sent every item that one (its decoding names no ``reply_budgets``). A plan frozen with another
    budget was given it, so a config that leaves it unset deviates, as it did before."""
    decoding = frozen.get("decoding")
    if config.generation.max_tokens is not None or not isinstance(decoding, Mapping):
        return config
    if "reply_budgets" in decoding or decoding.get("max_tokens") != DEFAULT_MAX_TOKENS:
        return config
    generation = config.generation.model_copy(update={"max_tokens": DEFAULT_MAX_TOKENS})
    return config.model_copy(update={"generation": generation})
