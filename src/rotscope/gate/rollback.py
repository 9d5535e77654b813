"""What a release must do when its gate FAILs (the record's ``rollback``): restore the baseline's
complete runtime specification, stop claiming the lengths that no longer pass, drop every cache
built on the candidate's prompts, and keep the newly failing layouts as permanent cases.

The lengths no longer supported come from the record's ``supported_up_to`` (per task, the longest
length at which it and every shorter length pass) when the record has one; otherwise, per task,
from the failing slices: every tested length from the shortest failing one up (a length is claimed
only when it and every shorter one pass). ``unsupported_lengths`` is the one seam to change when
the gate's window computation changes. When the baseline can no longer be restored, the advice is
``without_baseline`` (the window still supported, retrieval, the tasks to refuse), from the
candidate's measured data; a FAIL on forbidden claims first asks for a safety review.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, TypedDict

from rotscope.gate.record_checks import Caches, Rollback
from rotscope.gate.without_baseline import steps as advice_steps
from rotscope.gate.without_baseline import without_baseline

RUNTIME_KEYS = (
    "model",
    "model_digest",
    "tokenizer_digest",
    "template_digest",
    "system_prompt_digest",
    "assembler_digest",
)
"""The runtime specification a rollback restores, as the record's ``baseline`` binding names it."""
NEW_CASES_FILE = "newly-failing-cases.jsonl"


def unsupported_lengths(record: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per task, the tested lengths the candidate may no longer claim (see the module docstring)."""
    tested: dict[str, set[int]] = defaultdict(set)
    failing: dict[str, set[int]] = defaultdict(set)
    for item in record.get("slices", []):
        if item["length"] > 0:  # the evidence-only control is at no length of the grid
            tested[item["task"]].add(item["length"])
            if item["verdict"] == "FAIL":
                failing[item["task"]].add(item["length"])
    window = record.get("supported_up_to")
    found: dict[str, list[int]] = {}
    for task, lengths in sorted(tested.items()):
        if isinstance(window, Mapping) and task in window:
            limit = _limit(window[task])
            beyond = [length for length in lengths if limit is None or length > limit]
        elif failing.get(task):
            beyond = [length for length in lengths if length >= min(failing[task])]
        else:
            beyond = []
        if beyond:
            found[task] = sorted(beyond)
    return found


def _limit(value: Any) -> int | None:
    """A task's ``supported_up_to`` as a length (``None``: no length supported)."""
    if isinstance(value, Mapping):
        value = value.get("length_tokens", value.get("length"))
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def cases_command(candidate_path: str, baseline_path: str) -> str:
    """The command that writes the candidate's newly failing layouts as pinned case-file lines."""
    return (
        f"rotscope cases {shlex.quote(candidate_path)} --failing --since {shlex.quote(baseline_path)} "
        f"-o {NEW_CASES_FILE}"
    )


class BaselineSettings(TypedDict):
    """The baseline's settings its digests stand for (``Rollback.restore_settings``); the subject's
    definition and the engine's options as the run's config and manifest stored them."""

    subject_definition: Any
    system_prompt: str | None
    chat_template: str | None
    engine: Any


def settings(config: Mapping[str, Any] | None, manifest: Mapping[str, Any] | None) -> BaselineSettings:
    """The baseline's settings that its digests stand for: its subject's definition, its system
    prompt and chat template, its engine's options."""
    config, manifest = config or {}, manifest or {}
    return {
        "subject_definition": (config.get("subjects") or [None])[0] if config.get("subject") else None,
        "system_prompt": config.get("system_prompt"),
        "chat_template": config.get("chat_template"),
        "engine": (manifest.get("subject") or {}).get("engine"),
    }


def rollback(
    record: Mapping[str, Any], baseline_settings: Mapping[str, Any] | None = None
) -> Rollback | None:
    """The rollback guidance of a FAILed gate's record, read as written (``GateRecord.model_dump()``,
    or a record of an earlier shape); ``baseline_settings``: ``settings`` of the baseline run;
    ``None`` for any other verdict."""
    if record.get("verdict") != "FAIL":
        return None
    baseline, candidate = record["baseline"], record["candidate"]
    restore = {key: baseline.get(key) for key in RUNTIME_KEYS}
    changed = [key for key in RUNTIME_KEYS if baseline.get(key) != candidate.get(key)]
    lengths = unsupported_lengths(record)
    window = record.get("supported_up_to")
    prefixes = {key: candidate.get(key) for key in RUNTIME_KEYS if key != "model"}
    imported = candidate.get("imported")  # its note: no prompts or layouts to pin as cases
    advice = without_baseline(record)
    forbidden = record.get("forbidden") or {}
    safety = []
    if forbidden.get("replies"):
        ranked = sorted(forbidden["claims"].items(), key=lambda item: (-item[1], item[0]))
        named = ", ".join(f"{claim} x{count}" for claim, count in ranked)
        safety.append(
            f"Put the candidate through a separate safety review: {forbidden['replies']} of its "
            f"replies state a forbidden claim ({named})."
        )
    return Rollback(
        restore={"run": baseline.get("run"), "subject": baseline.get("subject"), **restore},
        restore_settings=dict(baseline_settings or {}),
        changed=changed,
        unsupported_lengths=lengths,
        supported_up_to=dict(window) if isinstance(window, Mapping) else None,
        lengths_from="supported_up_to" if isinstance(window, Mapping) else "failing slices",
        caches=Caches(
            drop="every cache keyed on the candidate's prompt prefixes: engine KV and prefix caches, "
            "saved engine states, provider prompt caches and response caches of the candidate model",
            built_with=prefixes,
        ),
        cases_command=None if imported else cases_command(str(candidate["path"]), str(baseline["path"])),
        steps=[*safety, *_steps(restore, changed, lengths, candidate, baseline), *advice_steps(advice)],
        without_baseline=advice,
    )


def _steps(
    restore: Mapping[str, Any],
    changed: list[str],
    lengths: Mapping[str, list[int]],
    candidate: Mapping[str, Any],
    baseline: Mapping[str, Any],
) -> list[str]:
    named = ", ".join(f"{key} {restore[key]}" for key in RUNTIME_KEYS if restore[key] is not None)
    steps = [
        f"Restore the baseline's complete runtime specification ({named})"
        + (f"; the candidate changed {', '.join(changed)}." if changed else "."),
    ]
    if lengths:
        listed = "; ".join(f"{task}: {', '.join(map(str, found))}" for task, found in lengths.items())
        steps.append(f"Stop claiming support for these lengths (tokens) until they pass again: {listed}.")
    steps.append(
        "Drop every cache keyed on the candidate's prompt prefixes (KV and prefix caches, saved "
        "states, provider prompt caches, response caches): they were built with the candidate's "
        "tokenizer, template and system prompt."
    )
    imported = candidate.get("imported")
    if imported:
        steps.append(
            f"The newly failing items cannot be kept as cases from {candidate.get('run')}: {imported}. "
            "Run the failing lengths with rotscope, then keep that run's newly failing layouts "
            "(rotscope cases RUN --failing --since BASELINE)."
        )
        return steps
    steps.append(
        "Keep the newly failing layouts as permanent cases: "
        + cases_command(str(candidate["path"]), str(baseline["path"]))
    )
    return steps
