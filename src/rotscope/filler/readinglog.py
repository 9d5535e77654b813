"""A generated reading log: documents an engineer might have read earlier (service READMEs,
runbooks, config files, incident notes), deterministic for a seed, so planted evidence blends in.

Every name and number is invented here. A document that would contain any string the experiment
guards (planted entities and values) is dropped, so filler never competes with the evidence.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

from rotscope.config.experiment import FillerConfig
from rotscope.filler import Document, register_filler

_ONSETS = ["br", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "th", "st", "gr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
_CODAS = ["", "n", "r", "l", "s", "th", "nd", "rk", "x"]
_TEAMS = ["platform", "payments", "search", "identity", "storage", "observability", "billing", "edge"]
_COMPONENTS = ["connection pool", "scheduler", "cache", "queue consumer", "load balancer", "index builder"]
_SYMPTOMS = [
    "elevated latency",
    "stuck deploys",
    "error spikes",
    "slow startup",
    "memory growth",
    "dropped jobs",
]
_CAUSES = ["a stale certificate", "an unbounded retry loop", "a misrouted health check", "a full disk",
           "a schema migration that locked a table", "a noisy neighbour on the shared host"]  # fmt: skip
_ACTIONS = ["add an alert on queue depth", "document the failover steps", "pin the client library",
            "raise the connection limit", "split the nightly batch", "add a canary stage"]  # fmt: skip
_KEYS = ["replicas", "log_level", "max_connections", "batch_size", "heartbeat_interval_s", "shard_count"]
_LEVELS = ["debug", "info", "warning"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def _name(rng: random.Random) -> str:
    syllables = rng.randint(2, 3)
    word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))
    return word.capitalize()


def _value(key: str, rng: random.Random) -> str:
    if key == "log_level":
        return rng.choice(_LEVELS)
    return str(rng.randint(2, 64) * (8 if key == "max_connections" else 1))


def _readme(rng: random.Random) -> str:
    service, team = _name(rng), rng.choice(_TEAMS)
    settings = "\n".join(f"- {key}: {_value(key, rng)}" for key in rng.sample(_KEYS, 3))
    return (
        f"# {service}\n\n{service} is maintained by the {team} team and feeds the "
        f"{rng.choice(_COMPONENTS)} of {_name(rng)}.\nIt was split out of {_name(rng)} during the "
        f"{rng.choice(_WEEKDAYS)} migration.\n\n"
        f"## Configuration\n\n{settings}\n\n## Operations\n\nRestart it from the {team} console; "
        f"expect about {rng.randint(2, 9)} minutes of reduced capacity while it warms up.\n"
    )


def _runbook(rng: random.Random) -> str:
    service = _name(rng)
    steps = [
        f"Open the {rng.choice(_COMPONENTS)} dashboard for {service} and note the error rate.",
        f"Check whether {_name(rng)} deployed in the last hour; roll it back if so.",
        f"Drain one node at a time and watch the {rng.choice(_COMPONENTS)} recover.",
        f"If nothing improves after {rng.randint(5, 30)} minutes, page the {rng.choice(_TEAMS)} on-call.",
    ]
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(rng.sample(steps, len(steps)), start=1))
    return f"Runbook: {service} {rng.choice(_SYMPTOMS)}\n\n{numbered}\n"


def _config(rng: random.Random) -> str:
    service = _name(rng).lower()
    lines = "\n".join(f"  {key}: {_value(key, rng)}" for key in rng.sample(_KEYS, 4))
    return f"# {service}.yaml, owned by {rng.choice(_TEAMS)}\n{service}:\n{lines}\n"


def _incident(rng: random.Random) -> str:
    service = _name(rng)
    return (
        f"Incident note {rng.randint(100, 999)}: {service} showed {rng.choice(_SYMPTOMS)} on "
        f"{rng.choice(_WEEKDAYS)}.\nRoot cause: {rng.choice(_CAUSES)}.\n"
        f"Follow-up: {rng.choice(_ACTIONS)}; owner {_name(rng)} {_name(rng)}.\n"
    )


_KINDS: tuple[Callable[[random.Random], str], ...] = (_readme, _runbook, _config, _incident)


def _guard_pattern(avoid: frozenset[str]) -> re.Pattern[str] | None:
    if not avoid:
        return None
    alternatives = "|".join(re.escape(item) for item in sorted(avoid, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.IGNORECASE)


@register_filler("readinglog")
def reading_log(config: FillerConfig, seed: int, avoid: frozenset[str] = frozenset()) -> Iterator[Document]:
    """Endless documents for ``seed``; ones containing a guarded string are skipped."""
    rng = random.Random(f"readinglog:{seed}")
    guard = _guard_pattern(avoid)
    number = 0
    while True:
        text = rng.choice(_KINDS)(rng)
        if guard is not None and guard.search(text):
            continue
        number += 1
        yield Document(name=f"reading-log-{number}", text=text)
