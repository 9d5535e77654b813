"""Rejected prompts in plain words: one line per rejected layout with its cause first
(``512 tokens at the beginning: the filler contains '45 days', a competing value``), repeated causes
summarised with counts (``8 layouts of case renewal rejected: ... — remove it or exclude the file``),
a case the verifier left nothing of said as not measured, and the full detail (every placement
retry, the layout's fields) one JSON line per rejection in the run folder's ``rejections.jsonl``."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypedDict, cast

from rotscope._util.text import mentions
from rotscope.filler import Document
from rotscope.position import NAMED_POSITIONS, OFFSET_PREFIX
from rotscope.types import ABSENT_SUFFIX, EVIDENCE_ONLY_SUFFIX, Rejection

REJECTIONS_FILE = "rejections.jsonl"
MAX_GROUP_LINES = 10
"""Summary lines shown at most; the rest are counted in one line (the file holds every one)."""
_PREFIX = re.compile(r"^case \S+(?: pinned)?(?: at (?:Layout\([^)]*\)|length \d+))?: ")
_COMPETING = re.compile(r"^the filler contains (.+), a competing value(?: for case \S+)?$")
_DEPTH_MISS = re.compile(
    r"^evidence (\S+) sits at depth [\d.]+, asked ([\d.]+) "
    r"\(tolerance ([\d.]+); the haystack has \d+ tokens\)$"
)
_HINTS = {
    "competing": "remove it or exclude the file",
    "depth": "widen depth_tolerance, or use longer lengths or filler with more line breaks",
}


@dataclass(frozen=True)
class Cause:
    """Why a layout was rejected, in a few words, and the kind of cause (for the hint)."""

    text: str
    kind: str = "other"


def cause_of(reason: str) -> Cause:
    """The verifier's reason without the case, the layout's repr and the placement retries: a
    competing value in the filler first (every retry fails on it), else the depth no place hit,
    else the first distinct clause (and how many more there were)."""
    body = _PREFIX.sub("", reason.strip(), count=1)
    clauses = list(dict.fromkeys(part.strip() for part in _clauses(body) if part.strip()))
    competing = [m.group(1) for m in map(_COMPETING.match, clauses) if m]
    if competing:
        values = ", ".join(dict.fromkeys(competing))
        plural = "competing values" if len(competing) > 1 else "a competing value"
        return Cause(f"the filler contains {values}, {plural}", "competing")
    misses = [m for m in map(_DEPTH_MISS.match, clauses) if m]
    if misses and len(misses) == len(clauses):
        evidence, asked, tolerance = misses[0].groups()
        tried = sum(1 for m in misses if m.group(1) == evidence)
        places = f"{tried} place{'s' if tried != 1 else ''} tried"
        return Cause(
            f"evidence {evidence} fits no place within {tolerance} of depth {asked} ({places})", "depth"
        )
    if not clauses:
        return Cause(reason.strip() or "no reason given")
    more = f" (and {len(clauses) - 1} more)" if len(clauses) > 1 else ""
    return Cause(clauses[0] + more)


def layout_words(rejection: Rejection) -> str:
    """``512 tokens at the beginning``, ``1,024 tokens at depth 0.25``, ``512 tokens at offset @300``,
    ``512 tokens, evidence absent``."""
    length = f"{rejection.length:,} tokens"
    position = rejection.position
    if rejection.control and rejection.case_ids and rejection.case_ids[0].endswith(ABSENT_SUFFIX):
        return f"{length}, evidence absent"
    if position is None or position == "absent":
        return length if rejection.depth is None else f"{length} at depth {rejection.depth:g}"
    if position.startswith(OFFSET_PREFIX):
        return f"{length} at offset {position}"
    if position in NAMED_POSITIONS:
        return f"{length} at the {position}"
    return f"{length} at depth {position}"


def case_name(rejection: Rejection) -> str:
    """The case a rejection belongs to, a control under its case's id."""
    ids = [_base(case_id) for case_id in rejection.case_ids] or ["?"]
    return "+".join(dict.fromkeys(ids))


def layout_line(rejection: Rejection) -> str:
    """``case renewal, 512 tokens at the beginning: the filler contains '45 days', a competing value``."""
    return f"case {case_name(rejection)}, {layout_words(rejection)}: {cause_of(rejection.reason).text}"


def summary_lines(
    rejections: Sequence[Rejection], measured: Iterable[tuple[str, str]], detail: str | None = None
) -> list[str]:
    """What a run says of its rejections: a layout rejected alone is its ``layout_line``; a cause
    shared by several layouts of a case is one line with the count and a hint; a case with no
    prompt left (``measured`` holds the (task, case id) of every case with a planned call) is said
    not measured; ``detail`` names the file with everything."""
    groups: dict[tuple[str, str, str], list[Rejection]] = {}
    kinds: dict[str, str] = {}
    for rejection in rejections:
        found = cause_of(rejection.reason)
        kinds[found.text] = found.kind
        groups.setdefault((rejection.task, case_name(rejection), found.text), []).append(rejection)
    lines: list[str] = []
    for (_, case, cause), members in groups.items():
        if len(members) == 1:
            lines.append(f"rejected: {layout_line(members[0])}")
            continue
        hint = _HINTS.get(kinds[cause])
        lines.append(
            f"{len(members)} layouts of case {case} rejected: {cause}" + (f" — {hint}" if hint else "")
        )
    if len(lines) > MAX_GROUP_LINES:
        hidden = len(lines) - MAX_GROUP_LINES + 1
        lines = [*lines[: MAX_GROUP_LINES - 1], f"... and {hidden} more lines of rejections"]
    kept = set(measured)
    lost: dict[tuple[str, str], int] = {}
    for rejection in rejections:
        for case_id in rejection.case_ids:
            key = (rejection.task, _base(case_id))
            if key not in kept:
                lost[key] = lost.get(key, 0) + 1
    lines.extend(
        f"case {case} ({task}) is not measured: the verifier rejected all {count} of its layouts"
        for (task, case), count in lost.items()
    )
    if detail is not None and rejections:
        lines.append(f"every rejection in full (retries, layouts): {detail}")
    return lines


class RejectionDetail(TypedDict):
    """A line of ``rejections.jsonl``: a ``Rejection``'s fields, the cause and the layout in words."""

    case: str
    layout: str
    cause: str
    task: str
    case_ids: tuple[str, ...]
    control: bool
    length: int
    depth: float | None
    position: str | None
    filler: str | None
    reason: str


def detail_records(rejections: Iterable[Rejection]) -> list[RejectionDetail]:
    """One record per rejection for ``rejections.jsonl``: its fields, the cause and the layout in words."""
    return [
        cast(
            RejectionDetail,
            {
                "case": case_name(rejection),
                "layout": layout_words(rejection),
                "cause": cause_of(rejection.reason).text,
                **dataclasses.asdict(rejection),
            },
        )
        for rejection in rejections
    ]


def _clauses(text: str) -> list[str]:
    """``text`` cut at each ``"; "`` outside parentheses (a retry's own ``(tolerance 0.1; ...)``)."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", index):
            parts.append(text[start:index])
            start = index + 2
    return [*parts, text[start:]]


def _base(case_id: str) -> str:
    for suffix in (ABSENT_SUFFIX, EVIDENCE_ONLY_SUFFIX):
        if case_id.endswith(suffix):
            return case_id.removesuffix(suffix)
    return case_id


_COMPETING_VALUE = re.compile(
    r"the filler contains ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"), a competing value"
)


def name_competing_files(rejected: list[Rejection], filler: Iterable[Document]) -> list[Rejection]:
    """Rejections for a competing value in the filler, with the filler documents that hold it named
    (``the filler contains '45 days' (in notes/a.txt), a competing value``): what to remove or
    exclude. The documents are read only when some rejection names such a value."""
    values: set[str] = set()
    for rejection in rejected:
        for found in _COMPETING_VALUE.finditer(rejection.reason):
            with contextlib.suppress(ValueError, SyntaxError):
                values.add(ast.literal_eval(found.group(1)))
    if not values:
        return rejected
    holders: dict[str, list[str]] = {}
    for document in filler:
        for value in values:
            if mentions(document.text, value):
                holders.setdefault(value, []).append(document.name)

    def named(reason: str) -> str:
        for value, names in holders.items():
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            reason = reason.replace(
                f"the filler contains {value!r}, a competing value",
                f"the filler contains {value!r} (in {shown}), a competing value",
            )
        return reason

    return [replace(rejection, reason=named(rejection.reason)) for rejection in rejected]
