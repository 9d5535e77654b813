"""Write a day and a half of synthetic production outcome records (``outcomes.jsonl``) for the
example: the privacy-safe record an application logs per request (no prompt, no reply), with the
same silent window shrink as ``production.py``'s endpoint at a known time.

    python examples/monitor/make_outcomes.py [-o outcomes.jsonl] [--hours 36] [--shrink-at-hour 24]

Requests arrive every hour (about 200 each), lengths log-uniform in 150..4000 tokens, the
evidence's quantile uniform, in conversations of a few requests (a hashed ``cluster_id``), in two
languages. Before the shrink 95% are ``answered`` (the rest ``missing_citation`` or ``abstained``);
after it, a request longer than the window (1000 tokens) whose evidence sits in the trimmed head
(quantile below ``1 - window / length``) is ``missing_citation`` or ``abstained`` four times in five.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

WINDOW = 1000
START = datetime(2026, 1, 5, tzinfo=UTC)


def records(hours: int, shrink_at_hour: int, seed: int = 37) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    conversation = 0
    for hour in range(hours):
        for _ in range(rng.randint(180, 220)):
            if rng.random() < 0.3:  # a new conversation; else the last one goes on
                conversation += 1
            ts = START + timedelta(hours=hour, seconds=rng.uniform(0, 3600))
            length = int(math.exp(rng.uniform(math.log(150), math.log(4000))))
            quantile = round(rng.random(), 4)
            lost = hour >= shrink_at_hour and length > WINDOW and quantile < 1 - WINDOW / length
            if lost and rng.random() < 0.8:
                outcome = rng.choice(["missing_citation", "abstained"])
            elif rng.random() < 0.95:
                outcome = "answered"
            else:
                outcome = rng.choice(["missing_citation", "abstained"])
            out.append(
                {
                    "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "length_tokens": length,
                    "evidence_quantile": quantile,
                    "outcome": outcome,
                    "language": rng.choice(["en", "de"]),
                    "cluster_id": hashlib.sha256(f"conversation-{conversation}".encode()).hexdigest()[:32],
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, default=Path("outcomes.jsonl"))
    parser.add_argument("--hours", type=int, default=36)
    parser.add_argument("--shrink-at-hour", type=int, default=24)
    args = parser.parse_args()
    made = records(args.hours, args.shrink_at_hour)
    args.out.write_text("".join(json.dumps(record) + "\n" for record in made), encoding="utf-8")
    print(f"{len(made)} records, the window shrinking at hour {args.shrink_at_hour}: {args.out}")


if __name__ == "__main__":
    main()
