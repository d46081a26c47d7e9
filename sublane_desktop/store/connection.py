"""Opening the database: WAL, foreign keys, and the one writer thread (STYLE: one writer)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from peewee import SqliteDatabase

from sublane_desktop import file_modes
from sublane_desktop.store import migrations
from sublane_desktop.store.models import db as db_proxy

T = TypeVar("T")

# sqlite3 "adapts" every parameter that is not exactly an int, float, str or bytearray. For
# None (most of a request record's columns) and bool it first looks for `__adapt__` on its
# protocol type, which builds and throws away an AttributeError per value: a fifth of the
# record writer's work (callgrind). An adapter registered for the type is found before that
# lookup, and both give SQLite what it stored before: NULL, and 0 or 1.
# {}.get(None) is None, without a Python function call per value
sqlite3.register_adapter(type(None), cast(Callable[[None], None], {}.get))
sqlite3.register_adapter(bool, int)

PRAGMAS = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    "busy_timeout": 5000,
    "synchronous": "normal",
}


def open_database(path: Path) -> SqliteDatabase:
    # Created 0600 before SQLite opens it: SQLite gives -wal and -shm the same mode (R-FT-6).
    file_modes.create_private(path)
    database = SqliteDatabase(str(path), pragmas=PRAGMAS, check_same_thread=False)
    database.connect(reuse_if_open=True)
    for suffix in ("-wal", "-shm"):
        file_modes.tighten(path.with_name(path.name + suffix))
    migrations.migrate(database, path)
    db_proxy.initialize(database)
    return database


class Store:
    """Runs database work off the event loop: writes on one thread, reads on another.

    peewee keeps one connection per thread, so each executor thread owns its connection.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = open_database(path)
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sl-db-write")
        self._reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sl-db-read")

    async def write(self, fn: Callable[[], T]) -> T:
        def run() -> T:
            # IMMEDIATE: take the write lock first. A deferred transaction that reads and then
            # writes fails at once ("database is locked", no busy wait) when another process —
            # the CLI beside a running server — committed in between (WAL's stale snapshot).
            with self.db.atomic("IMMEDIATE"):
                return fn()

        return await asyncio.get_running_loop().run_in_executor(self._writer, run)

    async def read(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._reader, fn)

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._reader.shutdown(wait=True)
        self.db.close()
