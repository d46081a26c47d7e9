"""Who may read the data dir: its owner only (R-FT-6).

The data dir holds the database (request history, key hashes), `server.json`, logs and perhaps
the encrypted keyring; none of it is anyone else's business on a shared machine. The directory
is 0700 and every file in it 0600. Modes someone loosened by hand are tightened at start, and
files we create are created private, never created open and tightened afterwards.

Every place that creates or opens one of these files calls this module; nothing else sets modes.
On Windows, POSIX modes mean little (the user profile's ACL protects the data dir) and chmod
only toggles read-only, so there these functions only create.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
_OTHERS = stat.S_IRWXG | stat.S_IRWXO  # the bits that let someone else in

# Files of ours that may sit in the data dir (the database's -wal/-shm/-journal included).
PRIVATE_GLOBS = (
    "sublane.db*",
    "server.json",
    "server.lock",
    "*.log",
    "secrets.enc",
    "*.bak",
    "*.backup*",
)

_POSIX = sys.platform != "win32"


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) 0700, or tighten it if it already exists."""
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tighten(path)
    return path


def tighten(path: Path) -> None:
    """Take group and other permissions off one existing file or directory."""
    if not _POSIX:
        return
    try:
        mode = stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return
    if mode & _OTHERS:
        os.chmod(path, mode & ~_OTHERS)


def tighten_data_dir(data_dir: Path) -> None:
    """The data dir and every file of ours in it: owner only (done at every start)."""
    data_dir = private_dir(data_dir)
    for pattern in PRIVATE_GLOBS:
        for path in data_dir.glob(pattern):
            if path.is_file() and not path.is_symlink():
                tighten(path)


def create_private(path: Path) -> Path:
    """Make sure `path` exists as a 0600 file (created so, never widened first).

    SQLite gives its -wal and -shm files the mode of the database file, so creating the
    database this way before SQLite opens it keeps those private too.
    """
    path = Path(path)
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    os.close(fd)
    tighten(path)
    return path


def open_private_append(path: Path):
    """A log file opened for appending, created 0600."""
    create_private(path)
    return open(path, "ab")


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with `text`, 0600 from the first byte (mkstemp creates 0600)."""
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
