"""Instruction adherence: whether a reply follows a rule given once, earlier in the prompt.

The oracle's ``answer`` names the rule as ``RULE:PARAMETER``: ``ms`` (report durations in
milliseconds), ``avoid:LIBRARY`` (never suggest it), ``ticket:ID`` (end every answer with it),
``json:FIELD`` (answer only with a JSON object holding that field). Each check is deterministic,
and a failure has a category saying how the reply broke the rule. Controls run without the
instruction and are checked alike: their compliance is the base rate by chance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from rotscope.answer_kinds import register_scorer
from rotscope.errors import BadInput
from rotscope.types import Case, Completion, Score

_NUMBER = r"\d+(?:[.,]\d+)?"
_MILLISECONDS = re.compile(rf"{_NUMBER}\s*(?:ms|msec|milliseconds?)\b", re.IGNORECASE)
_SECONDS = re.compile(rf"{_NUMBER}\s*(?:s|sec|secs|seconds?)\b", re.IGNORECASE)
_MINUTES = re.compile(rf"{_NUMBER}\s*(?:min|mins|minutes?)\b", re.IGNORECASE)
_TRAILING = " \t\n.!)]\"'`*"
_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)


def _milliseconds(reply: str, _: str) -> str | None:
    if _SECONDS.search(reply) or _MINUTES.search(reply):
        return "other_unit"
    return None if _MILLISECONDS.search(reply) else "no_duration"


def _avoid(reply: str, library: str) -> str | None:
    if re.search(rf"(?<![\w-]){re.escape(library)}(?![\w-])", reply, re.IGNORECASE):
        return "named_banned"
    return None if reply.strip() else "empty"


def _ticket(reply: str, ticket: str) -> str | None:
    if ticket not in reply:
        return "ticket_missing"
    return None if reply.rstrip(_TRAILING).endswith(ticket) else "ticket_not_last"


def _json_field(reply: str, field: str) -> str | None:
    text = reply.strip()
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError:
        return "not_json"
    if not isinstance(value, dict):
        return "not_json"
    return None if field in value else "field_missing"


CHECKS: dict[str, Callable[[str, str], str | None]] = {
    "ms": _milliseconds,
    "avoid": _avoid,
    "ticket": _ticket,
    "json": _json_field,
}
"""Rule -> check of a reply against the rule's parameter: ``None`` when it complies, else the
failure's category."""


def check_reply(rule: str, reply: str) -> str | None:
    """``None`` when ``reply`` follows ``rule`` (``RULE:PARAMETER``), else why it does not."""
    name, _, parameter = rule.partition(":")
    check = CHECKS.get(name)
    if check is None:
        raise BadInput(f"oracle: unknown instruction rule {name!r} (known: {', '.join(CHECKS)})")
    return check(reply, parameter)


@register_scorer("instruction", instruction="Reply briefly.")
def score_instruction(case: Case, completion: Completion, filler: str | None) -> Score:
    """``correct`` when the reply follows the case's rule, else ``incorrect`` with the category."""
    if completion.error is not None:
        return Score("error", "error")
    problem = check_reply(case.oracle.answer, completion.text)
    return Score("correct") if problem is None else Score("incorrect", problem)
