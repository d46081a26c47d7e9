"""Request records (SPEC §6): the stored history of model attempts, and its one writer.

What a row holds is exactly R-REC-2 — ids, provider, bounded model, protocol/operation, times,
outcome, a sanitized error code, the upstream status and token counts — never prompts, bodies,
headers, session ids or credentials. Token counts as stored:

- `input_tokens` is the TOTAL input of the attempt. For Anthropic that is the reported
  `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` (the proxy adds them
  before recording), so the cache-hit rate is simply `cached_tokens / input_tokens`.
- `cached_tokens` is the input served from the upstream cache (Anthropic: cache reads only;
  cache creation is input that was *written* to the cache, not served from it).
- Missing counts stay NULL; they are never guessed as zero.

Retention (R-REC-4): at most `MAX_RECORDS` rows and `MAX_AGE_SECONDS` by `started_at`, enforced
in the same transaction as every insert batch and again on every read. Ids come from an
AUTOINCREMENT key, so an id removed by cleanup is never handed out again.

Writes never happen on the event loop: `RequestLog.add` only queues, and one writer task hands
whatever is queued to the Store's writer thread as a single transaction.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import operator
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from sublane_desktop.core.cache_miss import CAUSES
from sublane_desktop.core.clock import Clock
from sublane_desktop.core.history import (
    ANY_MISS,
    CHOICES_MAX,
    DELETED,
    MAX_RECORDS,
    PAGE_SIZE,
    HistoryQuery,
    present,
    present_misses,
    retention_cutoff,
)
from sublane_desktop.core.records import OUTCOMES, RequestRecord, clean_text
from sublane_desktop.core.tasks import spawn
from sublane_desktop.store.models import Account, ClientKey, RecordRow, User

log = logging.getLogger(__name__)


_COLUMNS = (
    "id",
    "request_id",
    "user_id",
    "key_id",
    "group_id",
    "account_id",
    "provider",
    "model",
    "protocol",
    "operation",
    "started_at",
    "duration_ms",
    "first_token_ms",
    "outcome",
    "error_code",
    "upstream_status",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_miss",
    "reread_tokens",
    "previous_account_id",
    "idle_seconds",
)


# --- writes (run on the Store's writer thread, inside its transaction) -----------------------


LINGER_SECONDS = 0.05


_INSERT = (
    f"INSERT INTO request_records ({', '.join(_COLUMNS[1:])}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS[1:])})"
)


# What one value may be to go into SQLite as is; anything else is blanked (R-FT-2).
_SQLITE_INT = (-(2**63), 2**63 - 1)


_VALUES = operator.attrgetter(*_COLUMNS[1:])


def _row(record: RequestRecord) -> tuple[Any, ...]:
    """A record as insert parameters, every string cleaned once more (R-FT-2): the record
    path must hold whatever text reached it, however it got there."""
    values: tuple[Any, ...] = _VALUES(record)
    for value in values:
        # ASCII text without NUL is already clean (nearly every record): no copy at all
        if isinstance(value, str) and not (value.isascii() and "\x00" not in value):
            return tuple([clean_text(v) if isinstance(v, str) else v for v in values])
    return values


def _blanked(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The row with every value SQLite cannot take replaced: text by "" (some columns are
    NOT NULL), anything else by NULL."""

    def fit(value: Any) -> Any:
        if value is None or isinstance(value, float):
            return value
        if isinstance(value, (bool, int)):
            return int(value) if _SQLITE_INT[0] <= value <= _SQLITE_INT[1] else None
        if isinstance(value, str):
            return value if clean_text(value) == value else ""
        return None

    return tuple(fit(v) for v in row)


def insert_records(records: Iterable[RequestRecord], now: float) -> tuple[int, int]:
    """Insert a batch and apply retention in the same transaction (R-REC-4); returns
    (stored, dropped).

    Plain `executemany` on the writer's connection: this runs for every request the proxy
    serves, and peewee's query building cost more than the insert itself (profiled). A batch
    that fails is never dropped as a whole (R-FT-2): its rows are retried one by one, and a
    row that still fails is stored with its offending values blanked. Only a row that fails
    even then counts as dropped.
    """
    db = RecordRow._meta.database
    rows = [_row(record) for record in records]
    dropped = 0
    try:
        with db.atomic():  # a savepoint: a failure undoes this batch only
            _insert_all(db.connection(), rows)
    except (sqlite3.Error, ValueError, OverflowError, TypeError) as exc:
        log.warning(
            "a batch of %d request records failed (%s); saving them one by one",
            len(rows),
            type(exc).__name__,
        )
        for row in rows:
            if not (_insert_one(db, row) or _insert_one(db, _blanked(row))):
                dropped += 1
    prune(now)
    return len(rows) - dropped, dropped


# Rows per INSERT statement: SQLite before 3.32 takes at most 999 parameters per statement.
CHUNK_ROWS = 32


def _insert_all(connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert `rows` a few statements at a time, not one statement per row.

    `executemany` steps SQLite once per row, and the sqlite3 module lets go of the GIL and
    takes it back around every step: under load the proxy's loop thread then waited for the
    writer thread about twice per request (strace: futex calls per request). Multi-row
    INSERTs of power-of-two sizes (at most 6 distinct statements, all in sqlite3's statement
    cache) step a few times per batch.
    """
    at = 0
    while at < len(rows):
        size = min(CHUNK_ROWS, 1 << ((len(rows) - at).bit_length() - 1))
        values = [value for row in rows[at : at + size] for value in row]
        connection.execute(_insert_rows(size), values)
        at += size


@functools.lru_cache(maxsize=8)
def _insert_rows(count: int) -> str:
    one = f"({', '.join('?' for _ in _COLUMNS[1:])})"
    return _INSERT.partition(" VALUES ")[0] + " VALUES " + ", ".join([one] * count)


def _insert_one(db: Any, row: tuple[Any, ...]) -> bool:
    try:
        with db.atomic():
            db.connection().execute(_INSERT, row)
    except (sqlite3.Error, ValueError, OverflowError, TypeError) as exc:
        log.warning("a request record failed: %s", type(exc).__name__)
        return False
    return True


def prune(now: float) -> int:
    """Drop records older than seven days, then keep the newest MAX_RECORDS.

    Over the count limit, pool rejections go first, oldest first (R-FT-11): a flood of
    `account_busy` from one key must not push everyone's real history out.
    """
    db = RecordRow._meta.database
    removed = db.execute_sql(
        "DELETE FROM request_records WHERE started_at < ?", (retention_cutoff(now),)
    ).rowcount
    excess = db.execute_sql("SELECT COUNT(*) FROM request_records").fetchone()[0] - MAX_RECORDS
    if excess <= 0:
        return removed
    gone = db.execute_sql(
        "DELETE FROM request_records WHERE id IN (SELECT id FROM request_records"
        " WHERE outcome = 'rejected' ORDER BY id LIMIT ?)",
        (excess,),
    ).rowcount
    removed += gone
    excess -= gone
    if excess > 0:
        edge = db.execute_sql(
            "SELECT id FROM request_records ORDER BY id LIMIT 1 OFFSET ?", (excess - 1,)
        ).fetchone()
        removed += db.execute_sql("DELETE FROM request_records WHERE id <= ?", (edge[0],)).rowcount
    return removed


# --- reads (run on the Store's reader thread) -------------------------------------------------


def admin_user_id() -> int | None:
    """The administrator user: whose history the administrator token's personal view shows."""
    admin = User.select(User.id).where(User.is_admin == True).order_by(User.id).first()
    return admin.id if admin else None


def read_page(query: HistoryQuery, *, owner: int | None, now: float) -> dict[str, Any]:
    """One page, newest first. `owner` set = a personal view: the user filter is part of the
    WHERE clause, so paging can never step outside that user's rows (R-REC-6)."""
    personal = owner is not None
    where = ["r.started_at >= ?"]
    params: list[Any] = [retention_cutoff(now)]

    def match(clause: str, value: Any) -> None:
        if value is not None:
            where.append(clause)
            params.append(value)

    if personal:
        match("r.user_id = ?", owner)
    else:
        match("r.user_id = ?", query.user_id)
        match("r.account_id = ?", query.account_id)
    match("r.id < ?", query.cursor)
    match("r.outcome = ?", query.outcome)
    match("r.model = ?", query.model)
    match("r.key_id = ?", query.key_id)
    match("r.request_id = ?", query.request_id)
    match("r.started_at >= ?", query.since)
    match("r.started_at < ?", query.until)
    if query.cache_miss == ANY_MISS:
        where.append("r.cache_miss IS NOT NULL")
    else:
        match("r.cache_miss = ?", query.cache_miss)
    columns = ", ".join(f"r.{c}" for c in _COLUMNS)
    if personal:
        sql = f"SELECT {columns} FROM request_records r"
    else:
        sql = (
            f"SELECT {columns}, a.name AS account_name,"
            " a.deleted_at IS NOT NULL AS account_deleted, p.name AS previous_account_name"
            " FROM request_records r LEFT JOIN accounts a ON a.id = r.account_id"
            " LEFT JOIN accounts p ON p.id = r.previous_account_id"
        )
    sql += " WHERE " + " AND ".join(where) + " ORDER BY r.id DESC LIMIT ?"
    params.append(PAGE_SIZE + 1)
    cursor = RecordRow._meta.database.execute_sql(sql, params)
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, values, strict=False)) for values in cursor.fetchall()]
    more = len(rows) > PAGE_SIZE
    items = [present(row, personal=personal) for row in rows[:PAGE_SIZE]]
    return {"items": items, "next_cursor": items[-1]["id"] if more else None}


def read_filters(*, owner: int | None, now: float) -> dict[str, Any]:
    """Choices present in retained history within the caller's scope; no secrets, no hashes.

    Personal scope lists outcomes, models and the caller's keys (revoked ones too); the
    administrator scope adds users and subscription accounts.
    """
    database = RecordRow._meta.database
    # "+started_at": the cutoff keeps nearly every row, so a plain table scan beats walking
    # the started_at index and looking each row up.
    where = "+started_at >= ?"
    params: list[Any] = [retention_cutoff(now)]
    if owner is not None:
        where += " AND user_id = ?"
        params.append(owner)

    def distinct(column: str) -> list[Any]:
        sql = (
            f"SELECT DISTINCT {column} FROM request_records WHERE {where}"
            f" AND {column} IS NOT NULL ORDER BY {column} LIMIT {CHOICES_MAX}"
        )
        return [row[0] for row in database.execute_sql(sql, params).fetchall()]

    seen = set(distinct("outcome"))
    misses = set(distinct("cache_miss"))
    key_ids = distinct("key_id")
    keys_by_id = {k.id: k for k in ClientKey.select().where(ClientKey.id.in_(key_ids))}
    keys = []
    for key_id in key_ids:
        row = keys_by_id.get(key_id)
        entry = {
            "id": key_id,
            "name": row.name if row else DELETED,
            "prefix": row.prefix if row else "",
            "revoked": row is None or row.revoked_at is not None,
        }
        if owner is None:
            entry["user_id"] = row.user_id if row else None
        keys.append(entry)
    choices: dict[str, Any] = {
        "outcomes": [o for o in OUTCOMES if o in seen],
        "models": distinct("model"),
        "cache_misses": [c for c in CAUSES if c in misses],
        "keys": keys,
    }
    if owner is None:
        user_ids = distinct("user_id")
        users = {u.id: u.name for u in User.select(User.id, User.name).where(User.id.in_(user_ids))}
        choices["users"] = [{"id": i, "name": users.get(i, DELETED)} for i in user_ids]
        account_ids = distinct("account_id")
        accounts = {
            a.id: a
            for a in Account.select(Account.id, Account.name, Account.deleted_at).where(
                Account.id.in_(account_ids)
            )
        }
        choices["accounts"] = [
            {
                "id": i,
                "name": accounts[i].name
                if i in accounts and accounts[i].deleted_at is None
                else DELETED,
                "deleted": i not in accounts or accounts[i].deleted_at is not None,
            }
            for i in account_ids
        ]
    return choices


def trace_rows(now: float) -> list[dict[str, Any]]:
    """Every retained attempt, oldest first, with what a replay needs (`sublane simulate
    --from-records`): when, which key, provider, model and operation, how long, and the token
    counts."""
    sql = (
        "SELECT id, started_at, key_id, provider, model, operation, duration_ms, input_tokens,"
        " output_tokens, cached_tokens, outcome FROM request_records WHERE started_at >= ?"
        " ORDER BY started_at, id"
    )
    cursor = RecordRow._meta.database.execute_sql(sql, (retention_cutoff(now),))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def read_misses(
    *, owner: int | None, since: float | None, until: float | None, now: float
) -> dict[str, Any]:
    """Cache misses by cause (and account, for the administrator) over a window (R-CF-2)."""
    database = RecordRow._meta.database
    where = ["r.started_at >= ?"]
    params: list[Any] = [max(retention_cutoff(now), since or 0.0)]
    if until is not None:
        where.append("r.started_at < ?")
        params.append(until)
    if owner is not None:
        where.append("r.user_id = ?")
        params.append(owner)
    clause = " AND ".join(where)
    total = database.execute_sql(
        f"SELECT COALESCE(SUM(r.input_tokens), 0) FROM request_records r WHERE {clause}", params
    ).fetchone()[0]
    cursor = database.execute_sql(
        "SELECT r.cache_miss, r.account_id, a.name AS account_name, COUNT(*) AS count,"
        " COALESCE(SUM(r.reread_tokens), 0) AS reread_tokens"
        " FROM request_records r LEFT JOIN accounts a ON a.id = r.account_id"
        f" WHERE {clause} AND r.cache_miss IS NOT NULL"
        " GROUP BY r.cache_miss, r.account_id ORDER BY r.cache_miss, r.account_id",
        params,
    )
    names = [d[0] for d in cursor.description]
    groups = [dict(zip(names, values, strict=False)) for values in cursor.fetchall()]
    return present_misses(groups, int(total), since=since, until=until, personal=owner is not None)


# --- the async side ---------------------------------------------------------------------------


class RequestLog:
    """Queues records from the loop and writes them in batches on the Store's writer thread.

    `add` never blocks. The writer task wakes on every `add` and writes everything queued in
    one transaction, so a record is visible to readers within milliseconds of its attempt
    ending. `flush()` waits until everything added so far has been handled.
    """

    def __init__(self, clock: Clock, on_written: Callable[[int], None] | None = None) -> None:
        self.clock = clock
        self._on_written = on_written or (lambda count: None)
        self._store: Any = None
        self._pending: list[RequestRecord] = []
        self._added = 0
        self.dropped = 0  # records that could not be stored at all (R-FT-2; 0 in every test)
        self._handled = 0
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[Any] | None = None
        self._closed = False

    def start(self, store: Any) -> None:
        self._store = store
        self._closed = False
        self._task = spawn(self._run(), name="request-records")
        if self._pending:
            self._wake.set()

    def add(self, record: RequestRecord) -> None:
        if self._closed:
            log.debug("request record %s arrived after shutdown", record.request_id)
            return
        self._pending.append(record)
        self._added += 1
        if len(self._pending) > MAX_RECORDS:
            # Only while no writer runs; retention would evict one anyway, and it evicts a
            # pool rejection before anything else (R-FT-11).
            pending = self._pending
            oldest = next((i for i, r in enumerate(pending) if r.outcome == "rejected"), 0)
            del pending[oldest]
            self._handled += 1
        self._wake.set()

    async def flush(self) -> None:
        """Wait until every record added so far is committed (or has failed to be)."""
        if self._task is None or self._task.done():
            return
        target = self._added
        async with self._progress:
            await self._progress.wait_for(lambda: self._handled >= target)

    async def stop(self, timeout: float = 5.0) -> None:
        """Flush (bounded), then end the writer task. Later records are dropped."""
        if self._task is None:
            return
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except TimeoutError:
            log.warning("%d request records not saved at shutdown", len(self._pending))
        self._closed = True
        task, self._task = self._task, None
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            # Linger a moment so a busy proxy writes one batch, not one transaction per
            # request; still far inside the 1 s visibility promise (R-REC-4). Records that
            # arrive while a batch is written set the wake again and wait out their own
            # linger: going straight on would write them a few at a time, one transaction
            # each, which cost the busy proxy more than all its inserts together (profiled).
            await asyncio.sleep(LINGER_SECONDS)
            self._wake.clear()
            batch = self._pending[:MAX_RECORDS]
            del self._pending[:MAX_RECORDS]
            if not batch:
                continue
            if self._pending:
                self._wake.set()  # more than one batch is queued: the rest goes next
            try:
                await self._write(batch)
            finally:
                self._handled += len(batch)
                async with self._progress:
                    self._progress.notify_all()

    async def _write(self, batch: list[RequestRecord]) -> None:
        now = self.clock.now()
        try:
            stored, dropped = await self._store.write(lambda: insert_records(batch, now))
        except Exception as exc:
            stored, dropped = 0, len(batch)
            log.error("could not save %d request records: %s", len(batch), type(exc).__name__)
        if dropped:
            self.dropped += dropped  # shown on /healthz and by `sublane status`
        if stored:
            self._on_written(stored)

    # --- reads ----------------------------------------------------------------------------------

    async def _prune_on_read(self, now: float) -> None:
        try:
            await self._store.write(lambda: prune(now))
        except Exception as exc:  # the read still hides expired rows by its own cutoff
            log.error("request record cleanup failed: %s", type(exc).__name__)

    async def page(self, query: HistoryQuery, *, owner: int | None) -> dict[str, Any]:
        """`{"items": [...], "next_cursor": id|None}`; `owner` = the personal view's user."""
        now = self.clock.now()
        await self._prune_on_read(now)
        return await self._store.read(lambda: read_page(query, owner=owner, now=now))

    async def misses(
        self, *, owner: int | None, since: float | None = None, until: float | None = None
    ) -> dict[str, Any]:
        now = self.clock.now()
        await self._prune_on_read(now)
        return await self._store.read(
            lambda: read_misses(owner=owner, since=since, until=until, now=now)
        )

    async def filters(self, *, owner: int | None) -> dict[str, Any]:
        now = self.clock.now()
        await self._prune_on_read(now)
        return await self._store.read(lambda: read_filters(owner=owner, now=now))
