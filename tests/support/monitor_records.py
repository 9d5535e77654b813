"""A day of monitor records with four outcomes over eight length bins and two languages: what the
width and OpenTelemetry tests of ``monitor show`` ingest."""

from __future__ import annotations

OUTCOMES = ("answered", "missing_citation", "abstained", "truncation_rejected")


def day_record(number: int) -> dict[str, object]:
    return {
        "ts": f"2026-03-01T{number % 24:02d}:00:00.{number:06d}+00:00",
        "length_tokens": 2000 * (1 + number % 8),
        "evidence_quantile": (number % 10) / 10,
        "outcome": OUTCOMES[number % 4],
        "language": "en" if number % 2 else "de",
    }
