"""What a view says of a run folder that is not finished: its items done, pending and in error,
and the command that goes on (issue 52: a view never presents an unfinished folder as if whole).

A subject of a session (``--models``, ``--pair``) resumes only with its session, so the command
names the session folder above it; every folder is quoted for a shell (``resume_hint``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope._util.resume_hint import resume_command
from rotscope.execution.state.run_folder import PAIR_FILE, SESSION_FILE
from rotscope.store import RunStore


@dataclass(frozen=True)
class Progress:
    """A run folder's rows by state, as its summary counts them (``records.summary.Items``)."""

    name: str
    folder: Path
    total: int
    done: int
    errors: int
    meta: Mapping[str, Any] | None = None
    """The run's metadata, where it names the session the folder belongs to."""

    @property
    def pending(self) -> int:
        return max(self.total - self.done - self.errors, 0)

    @property
    def complete(self) -> bool:
        """Every row answered (scored or in error)."""
        return self.pending == 0

    def line(self) -> str:
        """``NAME: 15 of 192 items done, 177 pending (2 in error) — resume it with `rotscope run
        --resume 'DIR'``` (errors only: ``retry them with ...``); "" for a folder with neither."""
        if not self.pending and not self.errors:
            return ""
        parts = [f"{self.name}: {self.done} of {self.total} items done"]
        if self.pending:
            parts.append(f"{self.pending} pending")
        if self.errors:
            parts.append(f"{self.errors} in error")
        verb = "resume it" if self.pending else "retry them"
        return f"{', '.join(parts)} — {verb} with `{resume_command(resume_folder(self.folder, self.meta))}`"


def resume_folder(run_dir: Path, meta: Mapping[str, Any] | None = None) -> Path:
    """The folder whose ``--resume`` continues ``run_dir``: the session folder above a session's
    subject (its record beside the subject folders, or the folder its store names), else itself."""
    above = run_dir.absolute().parent
    if (above / SESSION_FILE).is_file() or (above / PAIR_FILE).is_file():
        return run_dir.parent
    session = (meta or {}).get("pair") or (meta or {}).get("session")
    if isinstance(session, dict) and isinstance(session.get("folder"), str) and session["folder"]:
        return Path(session["folder"])
    return run_dir


def folder_progress(run_dir: Path) -> Progress:
    """The rows of ``run_dir``'s store by state (a readable store: the caller has read it)."""
    with RunStore.read(run_dir) as store:
        rows, meta = store.rows(), store.meta()
    done = sum(row["status"] == "ok" for row in rows)
    errors = sum(row["status"] == "error" for row in rows)
    return Progress(str(run_dir), run_dir, len(rows), done, errors, meta)
