"""One server per data dir (R-FT-7): an OS file lock on `<data dir>/server.lock`.

Two servers on one data dir would share a database and fight over `server.json`, so `sublane
status` and the levers would talk to whichever wrote last. The operating system holds the lock
for us: it goes away with the process, even after kill -9, so there is never a stale lock to
clean up. The file also says who holds it (the pid), for the message the second server prints.

Hand-written on fcntl/msvcrt rather than the `filelock` library: we need the holder's pid in
the file while it is locked, which filelock neither writes nor lets us read portably.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sublane_desktop import file_modes

LOCK_FILE = "server.lock"
# Windows locks are mandatory, so the pid is kept outside the locked byte to stay readable.
_WINDOWS_LOCK_OFFSET = 1 << 20


class LockHeld(Exception):
    """Another process serves this data dir; `pid` is its process id when it said so."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"{path} is locked by process {pid if pid is not None else '?'}")
        self.path = path
        self.pid = pid


class ServerLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise LockHeld at once (never waits)."""
        if self._fd is not None:
            return
        file_modes.private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, file_modes.FILE_MODE)
        try:
            _lock(fd)
        except OSError:
            pid = _read_pid(fd)
            os.close(fd)
            raise LockHeld(self.path, pid) from None
        file_modes.tighten(self.path)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        # The file stays: unlinking it could let a third process lock a fresh file while a
        # second one still holds the unlinked one.
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            _unlock(fd)
        finally:
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
