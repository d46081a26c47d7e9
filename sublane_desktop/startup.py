"""Why a server could not start, in one sentence a person can act on (R-FT-7, R-UI-8).

`Service.start` turns every failure it can foresee into a StartupError: `serve` and
`sublane run` print its message as one stderr line and exit 1, and the tray app shows it in a
dialog (for a port in use, one that offers another port). Nothing here imports Qt or aiohttp.
"""

from __future__ import annotations

import errno
import json
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sublane_desktop.instance_lock import LockHeld

STATUS_FILE = "server.json"
MAX_PORT = 65535


class StartupError(Exception):
    """A failure to start that the person can fix; `kind` says which, for the GUI."""

    ALREADY_SERVING = "already_serving"
    PORT_IN_USE = "port_in_use"
    BAD_PORT = "bad_port"
    DATA_DIR = "data_dir"
    DATABASE_LOCKED = "database_locked"
    OTHER = "other"

    def __init__(self, kind: str, message: str, *, port: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.port = port


def check_port(port: int) -> None:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise StartupError(
            StartupError.BAD_PORT,
            f"port {port} is not valid: use 1-{MAX_PORT}, or 0 to pick a free one",
            port=port if isinstance(port, int) else None,
        )


def already_serving(data_dir: Path, held: LockHeld) -> StartupError:
    """The message a second server prints, with the first one's URL when it has published it."""
    pid = held.pid
    url = None
    try:
        status = json.loads((Path(data_dir) / STATUS_FILE).read_text())
        if pid is None or status.get("pid") == pid:
            url, pid = status.get("url"), status.get("pid", pid)
    except (OSError, ValueError, AttributeError):
        pass
    who = f"pid {pid}" if pid is not None else "another process"
    if url:
        text = f"SubLane is already serving this data dir at {url} ({who})"
    else:
        text = f"SubLane is already starting on this data dir ({who})"
    return StartupError(StartupError.ALREADY_SERVING, text)


def data_dir_unusable(data_dir: Path, exc: OSError) -> StartupError:
    reason = exc.strerror or type(exc).__name__
    return StartupError(
        StartupError.DATA_DIR,
        f"cannot use the data dir {data_dir}: {reason} "
        "(choose another with --data-dir or SUBLANE_DATA_DIR)",
    )


@contextmanager
def data_dir_stage(data_dir: Path) -> Iterator[None]:
    """Creating, tightening and locking the data dir."""
    try:
        yield
    except LockHeld as held:
        raise already_serving(data_dir, held) from None
    except OSError as exc:
        raise data_dir_unusable(data_dir, exc) from None


@contextmanager
def database_stage(data_dir: Path) -> Iterator[None]:
    """Opening and migrating the database, and its first write."""
    path = Path(data_dir) / "sublane.db"
    try:
        yield
    except OSError as exc:
        raise data_dir_unusable(data_dir, exc) from None
    except Exception as exc:
        if _database_locked(exc):
            raise StartupError(
                StartupError.DATABASE_LOCKED,
                f"the database {path} is locked by another program; close it (or wait for it "
                "to finish) and start again",
            ) from None
        if _is_sqlite_error(exc):
            raise StartupError(
                StartupError.DATA_DIR, f"cannot open the database {path}: {exc}"
            ) from None
        raise


@contextmanager
def listen_stage(host: str, port: int) -> Iterator[None]:
    """Binding the proxy's port."""
    try:
        yield
    except OverflowError:  # socket.bind with a port past 65535
        raise StartupError(
            StartupError.BAD_PORT, f"port {port} is not valid: use 1-{MAX_PORT}", port=port
        ) from None
    except socket.gaierror as exc:
        raise StartupError(
            StartupError.OTHER, f"cannot listen on {host}: {exc.strerror or exc}", port=port
        ) from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                StartupError.PORT_IN_USE,
                f"port {port} on {host} is already in use by another program; choose another "
                "with --port (0 picks a free one)",
                port=port,
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise StartupError(
                StartupError.BAD_PORT,
                f"port {port} on {host} needs more privileges; choose one above 1023",
                port=port,
            ) from None
        raise StartupError(
            StartupError.OTHER, f"cannot listen on {host}:{port}: {exc.strerror or exc}", port=port
        ) from None


def _is_sqlite_error(exc: BaseException) -> bool:
    from peewee import DatabaseError

    return isinstance(exc, (sqlite3.Error, DatabaseError))


def _database_locked(exc: BaseException) -> bool:
    # peewee re-raises sqlite3's OperationalError as its own; both say "locked" or "busy".
    if not _is_sqlite_error(exc):
        return False
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text
