"""One writer per run folder: an OS lock (``flock``) on ``DIR/.rotscope.lock``, held by ``run`` and
``--resume`` from before the run store is opened (or migrated, or created) until the run ends.

Two writers of one folder would each run every unfinished item and each build their budget from
what was spent when they started, so the second is refused at once, naming the holder's pid. The
operating system releases the lock when its holder exits, however it exits, so a lock file left
behind by a crashed run never blocks the next one. Readers (``show``, ``report``, ``export``,
``gate``) never take it: the store's write-ahead log lets them read while a run writes.

The lock covers the store file itself as well: an ``flock`` on the inode ``run.db`` leads to (the
file a symbolic or hard link names, whichever folder it is in), taken with the folder's lock when
the store exists and, for a new store, on the file created before it is renamed into place. Two
folders whose ``run.db`` is one file so never have two writers. (SQLite's own locks are POSIX
record locks, which an ``flock`` neither takes nor releases on Linux; the lock's descriptor is
closed only after the run's connections are.)
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from rotscope._util.inside import open_own
from rotscope.errors import BadInput

LOCK_FILE = ".rotscope.lock"
STORE_FILE = "run.db"

_HELD: dict[Path, RunLock] = {}
"""The locks this process holds, by resolved run folder (``held``)."""


class RunFolderLocked(BadInput):
    """Another process is writing the run folder (exit 2, nothing of this process ran)."""


class RunLock:
    """The exclusive lock of ``run_dir``, taken on enter; the folder must exist."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None
        self._store_fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting; ``RunFolderLocked`` names the holder when it is held."""
        while True:
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT)  # never through a link planted there
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                raise RunFolderLocked(
                    f"{self.run_dir}: another rotscope run (pid {holder}) is writing this run folder; "
                    "wait for it to finish or stop it (show, report and export work meanwhile)"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, self.path):
                break
            os.close(fd)  # the file was removed (by ``release(remove=True)``) after we opened it
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd
        try:
            store = self.run_dir / STORE_FILE
            if store.exists():
                self.hold_store(store)
        except BaseException:
            self.release()
            raise
        _HELD[self.run_dir.resolve()] = self

    def hold_store(self, path: Path) -> None:
        """Lock the store file ``path`` leads to (its inode), for as long as the folder's lock is
        held; ``RunFolderLocked`` when another run, through another folder, holds that file."""
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunFolderLocked(
                f"{self.run_dir / STORE_FILE}: its file {path.resolve()} is being written by another "
                "rotscope run (another run folder's run.db leads to the same file); wait for it to finish, "
                "or give this folder a store of its own"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        if self._store_fd is not None:
            os.close(self._store_fd)
        self._store_fd = fd

    def release(self, *, remove: bool = False) -> None:
        """Let the lock go; ``remove`` deletes the lock file first (a folder being cleaned away).
        Removing it while still holding it is safe: ``acquire`` checks that the file it locked is
        still the one at the path."""
        if self._fd is None:
            return
        _HELD.pop(self.run_dir.resolve(), None)
        if self._store_fd is not None:
            fcntl.flock(self._store_fd, fcntl.LOCK_UN)
            os.close(self._store_fd)
            self._store_fd = None
        if remove:
            self.path.unlink(missing_ok=True)
        else:
            os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()


def held(run_dir: Path) -> RunLock | None:
    """The lock of ``run_dir`` this process holds, if it holds one."""
    return _HELD.get(run_dir.resolve())


def _read_pid(fd: int) -> str:
    """The pid the holder wrote, or ``unknown`` in the instant between its lock and its write."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)
