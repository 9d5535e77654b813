"""The outcome record's allow-list: privacy by construction.

A record is one JSON object per line. Its known fields have typed values; any other field is a
*label*: a short token (at most 32 characters of ``[A-Za-z0-9_.:-]``) under a short name. Anything
else is refused (``Refused``), naming the line and the field, never the value: no text a prompt,
a completion or a message could carry reaches the store. Validation is plain Python (no pydantic
per record: an ingest checks a million records a minute)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rotscope.monitor.vocabulary import LabelPolicy

OUTCOMES = ("answered", "missing_citation", "abstained", "truncation_rejected", "forbidden_claim")
"""The outcomes a record may report; ``forbidden_claim`` is counted on its own, never in a rate."""
RATED_OUTCOMES = OUTCOMES[:-1]

LABEL = re.compile(r"[A-Za-z0-9_.:-]{1,32}")
"""A label's value: a short token, no spaces, no text."""
LABEL_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A further dimension's name."""
HASHED = re.compile(r"[0-9a-f]{16,64}")
"""A hashed ``cluster_id``: 16 to 64 lower-case hex digits."""
MAX_LABELS = 16
"""Further dimensions a record may carry."""
MAX_PIECES = 64
"""Pieces of evidence a record's ``evidence_quantile`` list may hold."""
HIGHEST = {"length_tokens": 100_000_000, "evidence_count": 1_000_000, "hops": 1_000}
"""The largest value each whole-number field may take (a number is range-checked before use)."""
YEARS = (1970, 9998)
"""The years a record's ``ts`` may fall in."""

LABEL_FIELDS = ("language", "risk", "model_digest", "template_digest")
"""The optional known fields whose values are labels."""
KNOWN_FIELDS = frozenset(
    (
        "ts",
        "length_tokens",
        "evidence_quantile",
        "outcome",
        "evidence_count",
        "hops",
        "cluster_id",
        *LABEL_FIELDS,
    )
)
TEXT_FIELDS = frozenset(
    (
        "prompt", "prompts", "completion", "completions", "message", "messages", "content", "contents",
        "text", "input", "inputs", "output", "outputs", "response", "request", "query", "question",
        "answer", "reply", "system", "user", "assistant", "document", "documents", "context", "body",
        "transcript", "instruction", "instructions", "history", "chat", "conversation", "email", "name",
        "snippet", "passage", "evidence", "citation", "citations", "tool_call", "tool_calls", "arguments",
    )
)  # fmt: skip
"""Names that stand for text: refused even with a label's value, so a short prompt is no label."""


class Refused(ValueError):
    """A record the allow-list refuses: ``field`` names it (``None`` for the line as a whole)."""

    def __init__(self, field: str | None, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"field {field!r}: {reason}" if field else reason)

    def line(self, source: str, number: int, kept: str = "nothing of the file was stored") -> str:
        """The one line that names the file's line and the field, never the value."""
        return f"{source}:{number}: {self}; {kept}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One checked record, as stored."""

    ts: str
    """The time, in UTC, ISO 8601."""
    epoch: float
    length_tokens: int
    quantiles: tuple[float, ...]
    outcome: str
    language: str | None
    risk: str | None
    evidence_count: int | None
    hops: int | None
    model_digest: str | None
    template_digest: str | None
    cluster_id: str | None
    labels: tuple[tuple[str, str], ...]
    """The further dimensions, sorted by name."""

    @property
    def position(self) -> float:
        """Where the evidence sits: the mean of its pieces' quantiles."""
        return sum(self.quantiles) / len(self.quantiles)


def _integer(record: dict[str, Any], field: str, lowest: int, required: bool) -> int | None:
    value = record.get(field)
    if value is None:
        if required or field in record:
            raise Refused(field, "missing" if field not in record else "null is not allowed")
        return None
    if type(value) is not int:
        raise Refused(field, f"must be a whole number (got {type(value).__name__})")
    if not lowest <= value <= HIGHEST[field]:
        raise Refused(field, f"must be from {lowest} to {HIGHEST[field]:,}")
    return value


def _quantile(value: Any) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise Refused("evidence_quantile", "must be a number in [0, 1] or a non-empty list of them")
    return float(value)


def _label(field: str, value: Any) -> str:
    if type(value) is not str:
        raise Refused(field, f"must be a short label (got {type(value).__name__})")
    if not LABEL.fullmatch(value):
        raise Refused(field, "not a short label (at most 32 characters of A-Z a-z 0-9 _ . : -)")
    return value


def _time(value: Any) -> tuple[str, float]:
    if type(value) is not str or len(value) > 40:
        raise Refused("ts", "must be an ISO 8601 time")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise Refused("ts", "must be an ISO 8601 time") from None
    if when.tzinfo is None:
        raise Refused("ts", "needs a time zone (Z or +hh:mm)")
    if not YEARS[0] <= when.year <= YEARS[1]:
        raise Refused("ts", f"must fall in the years {YEARS[0]} to {YEARS[1]}")
    when = when.astimezone(UTC)
    return when.isoformat(), when.timestamp()


def check(record: Any, policy: LabelPolicy | None = None) -> Outcome:
    """``record`` (a line's parsed JSON) checked against the allow-list; ``Refused`` otherwise.
    With ``policy`` (an ingest's: the store's vocabulary and salt) every label is a declared value
    (or its keyed hash), every further dimension declared and ``cluster_id`` re-hashed; without
    it, the record's shape alone is checked."""
    if type(record) is not dict:
        raise Refused(None, "not a JSON object")
    labels: list[tuple[str, str]] = []
    for field, value in record.items():
        if field in KNOWN_FIELDS:
            continue
        if not LABEL_NAME.fullmatch(field):
            # The name itself could be text: it is not shown either.
            raise Refused(None, "a field whose name is not a short lower-case label (name not shown)")
        if field in TEXT_FIELDS:
            raise Refused(field, "text fields are never stored")
        if policy is not None:
            policy.dimension(field)
            labels.append((field, policy.label(field, _label(field, value))))
        else:
            labels.append((field, _label(field, value)))
    if len(labels) > MAX_LABELS:
        raise Refused(None, f"more than {MAX_LABELS} further dimensions")
    if "ts" not in record:
        raise Refused("ts", "missing")
    ts, epoch = _time(record["ts"])
    length = _integer(record, "length_tokens", 1, True)
    assert length is not None
    if "evidence_quantile" not in record:
        raise Refused("evidence_quantile", "missing")
    given = record["evidence_quantile"]
    if type(given) is list:
        if not given:
            raise Refused("evidence_quantile", "an empty list")
        if len(given) > MAX_PIECES:
            raise Refused("evidence_quantile", f"more than {MAX_PIECES} pieces")
        quantiles = tuple(_quantile(value) for value in given)
    else:
        quantiles = (_quantile(given),)
    outcome = record.get("outcome")
    if outcome not in OUTCOMES or type(outcome) is not str:
        raise Refused("outcome", f"must be one of {', '.join(OUTCOMES)}")
    known: dict[str, str | None] = {}
    for field in LABEL_FIELDS:
        value = record.get(field)
        if value is None and field not in record:
            known[field] = None
        else:
            shaped = _label(field, value)
            known[field] = shaped if policy is None else policy.label(field, shaped)
    cluster = record.get("cluster_id")
    if (cluster is not None or "cluster_id" in record) and (
        type(cluster) is not str or not HASHED.fullmatch(cluster)
    ):
        raise Refused("cluster_id", "must be hashed: 16 to 64 lower-case hex digits")
    if cluster is not None and policy is not None:
        cluster = policy.cluster(cluster)
    return Outcome(
        ts=ts,
        epoch=epoch,
        length_tokens=length,
        quantiles=quantiles,
        outcome=outcome,
        language=known["language"],
        risk=known["risk"],
        evidence_count=_integer(record, "evidence_count", 0, False),
        hops=_integer(record, "hops", 1, False),
        model_digest=known["model_digest"],
        template_digest=known["template_digest"],
        cluster_id=cluster,
        labels=tuple(sorted(labels)),
    )
