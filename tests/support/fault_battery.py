"""What every case of the fault battery checks (issue 52; ``pytest -m fault_battery`` runs them all
and ``--collect-only`` counts them): no traceback whatever the input, nothing outside the run folder
touched, no planted text stored.

A case marks itself ``@pytest.mark.fault_battery`` and asserts with these helpers, so the closing
table (cases, passes, tracebacks, data outside folders touched, text stored) is the suite's own
count and not a separate script's.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from click.testing import Result


def assert_no_traceback(result: Result, *, allowed: tuple[int, ...] = (0, 2)) -> None:
    """The command ended with one of ``allowed`` exit codes and printed no traceback; an exit 2 says
    one line starting ``rotscope: ``."""
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in allowed, (result.exit_code, result.output, result.exception)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("rotscope: "), result.stderr


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path → sha256 of its bytes, links by their target): equal
    before and after a command means it touched nothing there."""
    digest: dict[str, str] = {}
    if not folder.exists():
        return digest
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            digest[key] = "link:" + str(path.readlink())
        elif path.is_file():
            digest[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            digest[key] = "dir"
    return digest


def bystander(folder: Path) -> Path:
    """A folder of precious files outside any run folder; compare ``tree_digest`` before and after."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "precious.txt").write_text("do not touch\n", encoding="utf-8")
    (folder / "nested").mkdir(exist_ok=True)
    (folder / "nested" / "also.txt").write_text("nor this\n", encoding="utf-8")
    return folder


def stored_text(database: Path) -> str:
    """Everything a SQLite file holds that a reader could get back: every text and blob cell of every
    table, decoded, joined; plus the raw file bytes decoded leniently (so a value in a free page or
    the WAL beside it is found too)."""
    parts: list[str] = []
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in connection.execute("select name from sqlite_master where type='table'")]
        for table in tables:
            for row in connection.execute(f'select * from "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        parts.append(cell.decode("utf-8", "replace"))
                    elif isinstance(cell, str):
                        parts.append(cell)
    finally:
        connection.close()
    for path in (database, database.with_name(database.name + "-wal")):
        if path.exists():
            parts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(parts)


def assert_text_absent(database: Path, *planted: str) -> None:
    """None of the ``planted`` strings (case-insensitive) can be read back from ``database``."""
    text = stored_text(database).lower()
    for needle in planted:
        assert needle.lower() not in text, needle
