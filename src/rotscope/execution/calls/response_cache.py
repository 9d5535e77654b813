"""The on-disk response cache of remote calls: a repeated run of the same experiment costs nothing.

A reply is keyed by a hash of the provider, the exact model and everything its backend reports
identifying it, the messages sent, every generation parameter and the trial index. Failed calls
are never stored, so they are retried. Only remote backends use it: local engines cost nothing,
and their reruns must really run (the KV-reuse correctness guard compares two real runs).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from rotscope._util.cache_dir import user_cache_dir
from rotscope._util.safe_text import storable
from rotscope.config.experiment import CacheConfig
from rotscope.errors import BadInput
from rotscope.types import BackendDescription, Completion, GenerateRequest

CACHE_FILE = "responses.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, latency_s REAL NOT NULL,
    created_at TEXT NOT NULL
)
"""
UNKNOWN = -1
"""``cached_tokens`` of a reply whose cached tokens were unknown (the column predates ``None``)."""


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/rotscope/responses.db`` (``~/.cache`` when the variable is unset)."""
    return user_cache_dir() / CACHE_FILE


def cache_key(model: BackendDescription, request: GenerateRequest, trial: int) -> str:
    """Hash of what determines a reply: ``model`` is the backend's ``describe()`` (provider, exact
    model, its options), then the messages, the generation parameters and the trial index."""
    material = json.dumps(
        {
            "model": model,
            "messages": list(request.messages),
            "params": asdict(request.params),
            "trial": trial,
            # Only where decoding stops at the answer: the keys of replies that ran to their end stay.
            **({"stop": asdict(request.stop)} if request.stop is not None else {}),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class ResponseCache:
    """Replies by key in one SQLite file; each store commits at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path)
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._db:
                self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise BadInput(f"cache.path: cannot use {path} as the response cache ({error})") from None

    @classmethod
    def open(cls, config: CacheConfig) -> ResponseCache | None:
        if not config.enabled:
            return None
        return cls(Path(config.path).expanduser() if config.path else default_cache_path())

    def get(self, key: str) -> Completion | None:
        row = self._db.execute(
            "SELECT text, prompt_tokens, completion_tokens, cached_tokens, latency_s "
            "FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return Completion(
            text=row[0],
            prompt_tokens=row[1],
            completion_tokens=row[2],
            cached_tokens=None if row[3] == UNKNOWN else row[3],
            latency_s=row[4],
        )

    def put(self, key: str, completion: Completion) -> None:
        if completion.error is not None:
            return
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    storable(completion.text),
                    completion.prompt_tokens,
                    completion.completion_tokens,
                    UNKNOWN if completion.cached_tokens is None else completion.cached_tokens,
                    completion.latency_s,
                    datetime.now(UTC).isoformat(timespec="seconds"),
                ),
            )

    def close(self) -> None:
        self._db.close()
