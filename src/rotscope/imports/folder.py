"""An imported run folder: checked items written as a run store of the same schema as a run's,
made whole before it appears (``execution.state.run_folder.create_store``) under the folder's one
writer, so ``show``, ``report``, ``compare`` and ``gate`` read it as they read any run."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from rotscope.errors import BadInput
from rotscope.execution.state.lock import LOCK_FILE
from rotscope.execution.state.run_folder import create_store, has_store, writing
from rotscope.imports.items import ImportedItem, import_meta, model_of, planned_row, result_values
from rotscope.run_meta import ImportedMeta
from rotscope.store import RunStore

CONFIG_NOTE = (
    "# This folder was made by rotscope import from {source}: its rows came from another harness\n"
    "# (no prompts, spans or verification), so there is no experiment to run or resume.\n"
)
"""The folder's config.yaml: a note, not an experiment."""


def file_digest(path: Path) -> str:
    """The SHA-256 of the imported file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_out(run_dir: Path) -> None:
    """A new or empty folder (its lock aside): an import never writes into a run."""
    if has_store(run_dir):
        raise BadInput(f"out: {run_dir} holds a run already; choose another --out")
    if run_dir.exists() and any(path.name != LOCK_FILE for path in run_dir.iterdir()):
        raise BadInput(f"out: {run_dir} is not empty; choose another --out")


def check_base_lengths(items: Sequence[ImportedItem], base_lengths: Sequence[int] | None) -> None:
    """Every base length (``--base-lengths``) is a length of ``items``: else one line naming it."""
    missing = sorted(set(base_lengths or ()) - {item.length for item in items})
    if missing:
        raise BadInput(
            f"--base-lengths: no row at length {missing[0]:,} (a base length is a length of the file)"
        )


def _folder_digest(folder: Path) -> str:
    """One digest of a folder's files (an lm-eval output folder of sample files), by name and content."""
    digest = hashlib.sha256()
    for path in sorted(child for child in folder.iterdir() if child.is_file()):
        digest.update(path.name.encode("utf-8") + b"\0" + file_digest(path).encode("ascii") + b"\0")
    return digest.hexdigest()[:16]


def write_import(
    run_dir: Path,
    items: Sequence[ImportedItem],
    *,
    source: Path,
    kind: str,
    tokenizer: str | None = None,
    extra: ImportedMeta | None = None,
    context_window: int | None = None,
    base_lengths: Sequence[int] | None = None,
) -> int:
    """Write ``items`` (from ``source``, of format ``kind``) as the run folder ``run_dir``; returns
    the rows written. ``extra`` adds keys to the folder's ``imported`` metadata; a base length
    the items never reach is refused."""
    missing = sorted(set(base_lengths or ()) - {item.length for item in items})
    if missing:
        raise BadInput(
            f"--base-lengths: no row at length {missing[0]:,} (a base length is a length of the file)"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise BadInput(f"out: {run_dir} is a file, not a folder")
    _check_out(run_dir)
    digest = file_digest(source) if source.is_file() else _folder_digest(source)
    model = model_of(items)
    rows = [planned_row(item, order, run_dir.name, model) for order, item in enumerate(items)]
    meta = import_meta(items, run_id=run_dir.name, source=source.name, kind=kind, digest=digest,
                       tokenizer=tokenizer, context_window=context_window,
                       base_lengths=base_lengths)  # fmt: skip
    meta["imported"].update(extra or {})

    def fill(store: RunStore) -> None:
        store.add_planned(rows, {})
        store.record({row["item_id"]: result_values(item) for row, item in zip(rows, items, strict=True)})
        store.set_meta(meta)

    with writing(run_dir):
        _check_out(run_dir)  # again under the lock: another writer may have come first
        create_store(run_dir, fill, CONFIG_NOTE.format(source=source.name)).close()
    return len(rows)
