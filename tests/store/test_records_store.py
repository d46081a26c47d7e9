"""Request records in the database (R-REC-2, R-REC-4): the write path, retention and ids."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.history import MAX_AGE_SECONDS, MAX_RECORDS, HistoryQuery
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.service import Service
from sublane_desktop.store import migrations
from sublane_desktop.store import records as store_records
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.models import Account, RecordRow
from tests.record_factory import a_record


@pytest.fixture
async def service(tmp_path: Path, secret_store, clock: FakeClock):
    svc = Service(tmp_path / "data", port=0, clock=clock, secret_store=secret_store)
    await svc.start()
    yield svc
    await svc.stop(drain_timeout=1)


def make(clock: FakeClock, n: int = 0, **fields) -> RequestRecord:
    values = dict(
        request_id=f"req_{n:024x}",
        started_at=clock.now(),
        account_id=1,
        duration_ms=120,
        first_token_ms=40,
        outcome="success",
        upstream_status=200,
        input_tokens=50,
        output_tokens=7,
        cached_tokens=30,
    )
    return a_record(**{**values, **fields})


async def stored_ids(service: Service) -> list[int]:
    return await service.store.read(
        lambda: [r.id for r in RecordRow.select(RecordRow.id).order_by(RecordRow.id)]
    )


async def test_a_record_round_trips_with_exactly_the_spec_fields(service, clock):
    service.record(make(clock, 1, error_code="overloaded error!", outcome="error"))
    await service.flush_records()
    page = await service.request_log.page(HistoryQuery(), owner=None)
    [item] = page["items"]
    assert page["next_cursor"] is None
    assert set(item) == {
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
        "account_name",
        "cache_hit_rate",
        "cache_miss",
        "reread_tokens",
        "previous_account_id",
        "idle_seconds",
        "previous_account_name",
    }
    # prose is not an identifier: replaced as a whole, never patched into one (R-FT-10)
    assert item["error_code"] == "error"
    assert item["started_at"] == clock.now()
    assert item["cache_hit_rate"] == "60%"
    assert item["account_name"] == "deleted"  # account 1 does not exist (any more)


async def test_missing_counts_stay_null(service, clock):
    service.record(
        make(
            clock,
            1,
            input_tokens=None,
            output_tokens=None,
            cached_tokens=None,
            first_token_ms=None,
            upstream_status=None,
            account_id=None,
        )
    )
    await service.flush_records()
    [item] = (await service.request_log.page(HistoryQuery(), owner=None))["items"]
    assert item["input_tokens"] is None and item["cached_tokens"] is None
    assert item["cache_hit_rate"] == "—"
    assert item["account_id"] is None and item["account_name"] == ""


async def test_model_is_bounded(service, clock):
    service.record(make(clock, 1, model="claude-" + "x" * 500))
    await service.flush_records()
    [item] = (await service.request_log.page(HistoryQuery(), owner=None))["items"]
    assert len(item["model"]) == 128


async def test_records_added_is_published_after_commit(service, clock):
    seen: list[tuple[int, int]] = []

    def listener(topic, payload):
        # At publication time the rows are committed: a fresh connection can read them.
        con = sqlite3.connect(service.store.path)
        try:
            rows = con.execute("SELECT count(*) FROM request_records").fetchone()[0]
        finally:
            con.close()
        seen.append((payload["count"], rows))

    service.bus.subscribe("records.added", listener)
    for n in range(5):
        service.record(make(clock, n))
    await service.flush_records()
    assert sum(count for count, _ in seen) == 5
    assert seen[-1][1] == 5


async def test_record_does_not_touch_the_database_on_the_loop(service, clock, monkeypatch):
    import threading

    threads: list[str] = []
    real = store_records.insert_records

    def spy(batch, now):
        threads.append(threading.current_thread().name)
        return real(batch, now)

    monkeypatch.setattr(store_records, "insert_records", spy)
    service.record(make(clock, 1))
    assert threads == []  # queued, not written, when record() returns
    await service.flush_records()
    assert threads and all(name.startswith("sl-db-write") for name in threads)


async def test_the_5001st_record_evicts_the_oldest(service, clock):
    for n in range(MAX_RECORDS):
        service.record(make(clock, n))
    await service.flush_records()
    ids = await stored_ids(service)
    assert len(ids) == MAX_RECORDS and ids[0] == 1
    service.record(make(clock, MAX_RECORDS))
    await service.flush_records()
    ids = await stored_ids(service)
    assert len(ids) == MAX_RECORDS
    assert ids[0] == 2 and ids[-1] == MAX_RECORDS + 1


async def test_eviction_is_in_the_same_transaction_as_the_insert(service, clock, monkeypatch):
    for n in range(3):
        service.record(make(clock, n))
    await service.flush_records()

    def broken_prune(now):
        raise RuntimeError("disk trouble")

    monkeypatch.setattr(store_records, "prune", broken_prune)
    with pytest.raises(RuntimeError):
        await service.store.write(
            lambda: store_records.insert_records([make(clock, 9)], clock.now())
        )
    assert await stored_ids(service) == [1, 2, 3]  # the insert rolled back with the cleanup


async def test_a_failed_batch_does_not_stop_the_writer(service, clock, monkeypatch):
    real = store_records.insert_records
    calls = {"n": 0}

    def flaky(batch, now):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk full")
        return real(batch, now)

    monkeypatch.setattr(store_records, "insert_records", flaky)
    service.record(make(clock, 1))
    await service.flush_records()  # returns although the batch failed
    service.record(make(clock, 2))
    await service.flush_records()
    page = await service.request_log.page(HistoryQuery(), owner=None)
    assert [i["request_id"] for i in page["items"]] == [make(clock, 2).request_id]


async def test_seven_day_expiry_on_read(service, clock):
    service.record(make(clock, 1))
    await service.flush_records()
    clock.advance(MAX_AGE_SECONDS - 1)
    assert len((await service.request_log.page(HistoryQuery(), owner=None))["items"]) == 1
    clock.advance(2)
    assert (await service.request_log.page(HistoryQuery(), owner=None))["items"] == []
    assert await stored_ids(service) == []  # reading cleaned up, not only hid


async def test_seven_day_expiry_on_write(service, clock):
    service.record(make(clock, 1))
    await service.flush_records()
    clock.advance(MAX_AGE_SECONDS + 1)
    service.record(make(clock, 2))
    await service.flush_records()
    assert await stored_ids(service) == [2]


async def test_filters_also_clean_up_and_hide_expired(service, clock):
    service.record(make(clock, 1, model="claude-old"))
    await service.flush_records()
    clock.advance(MAX_AGE_SECONDS + 1)
    choices = await service.request_log.filters(owner=None)
    assert choices["models"] == [] and choices["outcomes"] == []
    assert await stored_ids(service) == []


async def test_ids_keep_increasing_after_cleanup(service, clock):
    for n in range(3):
        service.record(make(clock, n))
    await service.flush_records()
    clock.advance(MAX_AGE_SECONDS + 1)
    assert (await service.request_log.page(HistoryQuery(), owner=None))["items"] == []
    service.record(make(clock, 4))
    await service.flush_records()
    assert await stored_ids(service) == [4]


async def test_ids_survive_a_restart_without_reuse(tmp_path, secret_store, clock):
    first = Service(tmp_path / "data", port=0, clock=clock, secret_store=secret_store)
    await first.start()
    first.record(make(clock, 1))
    first.record(make(clock, 2))
    await first.stop(drain_timeout=1)  # stop flushes what is queued
    second = Service(tmp_path / "data", port=0, clock=clock, secret_store=secret_store)
    await second.start()
    try:
        clock.advance(MAX_AGE_SECONDS + 1)
        second.record(make(clock, 3))
        await second.flush_records()
        assert await stored_ids(second) == [3]
    finally:
        await second.stop(drain_timeout=1)


async def test_stop_flushes_the_queue(tmp_path, secret_store, clock):
    svc = Service(tmp_path / "data", port=0, clock=clock, secret_store=secret_store)
    await svc.start()
    for n in range(25):
        svc.record(make(clock, n))
    await svc.stop(drain_timeout=1)
    con = sqlite3.connect(tmp_path / "data" / "sublane.db")
    try:
        assert con.execute("SELECT count(*) FROM request_records").fetchone()[0] == 25
    finally:
        con.close()


async def test_pages_filters_and_scope(service, clock):
    start = clock.now()
    for n in range(120):
        service.record(
            make(
                clock,
                n,
                user_id=1 + n % 2,
                key_id=10 + n % 3,
                account_id=1 + n % 4,
                outcome="success" if n % 5 else "error",
                model=f"m{n % 2}",
                started_at=start + n,
            )
        )
    await service.flush_records()
    log = service.request_log

    async def walk(query: HistoryQuery, owner: int | None) -> list[dict]:
        items, cursor = [], None
        while True:
            page = await log.page(HistoryQuery(**{**query.__dict__, "cursor": cursor}), owner=owner)
            assert len(page["items"]) <= 50
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    everything = await walk(HistoryQuery(), None)
    assert [i["id"] for i in everything] == list(range(120, 0, -1))
    mine = await walk(HistoryQuery(user_id=2, account_id=3), owner=1)  # never widened
    assert len(mine) == 60 and {i["user_id"] for i in mine} == {1}
    assert {i["account_id"] for i in mine} == {None} and {i["account_name"] for i in mine} == {""}
    errors = await walk(HistoryQuery(outcome="error"), None)
    assert len(errors) == 24 and {i["outcome"] for i in errors} == {"error"}
    key = await walk(HistoryQuery(key_id=11, model="m1"), None)
    assert {(i["key_id"], i["model"]) for i in key} == {(11, "m1")}
    window = await walk(HistoryQuery(since=start + 10, until=start + 20), None)
    assert sorted(i["started_at"] - start for i in window) == list(range(10, 20))
    by_account = await walk(HistoryQuery(account_id=4, user_id=2), None)
    assert {(i["account_id"], i["user_id"]) for i in by_account} == {(4, 2)}
    one = await walk(HistoryQuery(request_id=make(clock, 7).request_id), None)
    assert [i["id"] for i in one] == [8]
    assert (await log.page(HistoryQuery(cursor=1), owner=None))["items"] == []
    exact = await log.page(HistoryQuery(cursor=51), owner=None)
    assert len(exact["items"]) == 50 and exact["next_cursor"] is None  # no empty last page


def test_migration_adds_the_table_and_keeps_existing_rows(tmp_path):
    from peewee import SqliteDatabase

    path = tmp_path / "old.db"
    db = SqliteDatabase(str(path))
    migrations.migrate(db, path, upto=2)
    db.execute_sql("INSERT INTO users (name, is_admin, created_at) VALUES ('admin', 1, 0)")
    db.close()
    store = Store(path)
    try:
        assert migrations.current_version(store.db) >= 3
        assert store.db.execute_sql("SELECT name FROM users").fetchall() == [("admin",)]
        sql = store.db.execute_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'request_records'"
        ).fetchone()[0]
        assert "AUTOINCREMENT" in sql
        indexes = {
            r[0]
            for r in store.db.execute_sql(
                "SELECT name FROM sqlite_master WHERE type = 'index'"
                " AND tbl_name = 'request_records'"
            )
        }
        assert {"request_records_user_id", "request_records_started_at"} <= indexes
    finally:
        store.close()
    assert list(tmp_path.glob("old.db.v2.*.bak"))  # backed up before migrating


async def test_misses_by_cause_over_a_window_and_for_one_person(service, clock):
    """R-CF-2: the forensics totals, the time window and the personal view's scope."""
    t0 = clock.now()
    service.record(make(clock, 1, input_tokens=1000))  # a hit: input, no miss
    service.record(make(clock, 2, cache_miss="ttl_expired", reread_tokens=300, input_tokens=400))
    service.record(
        make(clock, 3, cache_miss="ttl_expired", reread_tokens=100, user_id=2, input_tokens=100)
    )
    service.record(make(clock, 4, cache_miss="account_switch", reread_tokens=50, account_id=None))
    clock.advance(600)
    service.record(make(clock, 5, cache_miss="first_turn", reread_tokens=9, input_tokens=10))
    await service.flush_records()

    everyone = await service.request_log.misses(owner=None)
    assert everyone["input_tokens"] == 1000 + 400 + 100 + 50 + 10
    causes = {c["cause"]: c for c in everyone["causes"]}
    assert (causes["ttl_expired"]["count"], causes["ttl_expired"]["reread_tokens"]) == (2, 400)
    assert causes["account_switch"]["count"] == 1 and causes["prefix_changed"]["count"] == 0
    assert everyone["reread_tokens"] == 459
    assert everyone["accounts"] == [
        {
            "account_id": 1,
            "account_name": "deleted",
            "cause": "first_turn",
            "count": 1,
            "reread_tokens": 9,
        },
        {
            "account_id": 1,
            "account_name": "deleted",
            "cause": "ttl_expired",
            "count": 2,
            "reread_tokens": 400,
        },
    ]

    mine = await service.request_log.misses(owner=1, until=t0 + 1)
    assert "accounts" not in mine  # a personal view has no per-account split
    assert mine["input_tokens"] == 1000 + 400 + 50 and mine["until"] == t0 + 1
    causes = {c["cause"]: c for c in mine["causes"]}
    assert causes["ttl_expired"]["reread_tokens"] == 300 and causes["first_turn"]["count"] == 0

    later = await service.request_log.misses(owner=None, since=t0 + 1)
    assert later["input_tokens"] == 10 and later["from"] == t0 + 1


async def test_the_trace_for_a_replay_lists_every_retained_attempt_oldest_first(service, clock):
    service.record(make(clock, 1, model="claude-a", duration_ms=10))
    clock.advance(5)
    service.record(make(clock, 2, model="claude-b", outcome="error", input_tokens=None))
    await service.flush_records()
    rows = await service.store.read(lambda: store_records.trace_rows(clock.now()))
    assert rows == [
        {
            "id": 1,
            "started_at": clock.now() - 5,
            "key_id": 1,
            "provider": "anthropic",
            "model": "claude-a",
            "operation": "messages",
            "duration_ms": 10,
            "input_tokens": 50,
            "output_tokens": 7,
            "cached_tokens": 30,
            "outcome": "success",
        },
        {
            "id": 2,
            "started_at": clock.now(),
            "key_id": 1,
            "provider": "anthropic",
            "model": "claude-b",
            "operation": "messages",
            "duration_ms": 120,
            "input_tokens": None,
            "output_tokens": 7,
            "cached_tokens": 30,
            "outcome": "error",
        },
    ]
    assert await service.store.read(store_records.admin_user_id) == 1


async def test_filter_choices_are_what_the_callers_history_holds(service, clock):
    """The Requests window's choices (R-REC-6): a person sees only their own outcomes, models
    and keys; the administrator also sees users and accounts, deleted ones by that name."""

    def setup():
        admin = repo.ensure_admin()
        alice = repo.add_user("alice")
        team = repo.get_or_create_group("team")
        mine, _ = repo.create_key("laptop", admin, team)
        hers, _ = repo.create_key("phone", alice, team)
        repo.revoke_key(str(hers.id))
        work = repo.add_account("anthropic", "work", "oauth", team)
        gone = repo.add_account("codex", "old", "api_key", team)
        Account.update(deleted_at=1.0).where(Account.id == gone.id).execute()
        return admin.id, alice.id, mine, hers, work.id, gone.id

    admin, alice, mine, hers, work, gone = await service.store.write(setup)
    service.record(make(clock, 1, user_id=admin, key_id=mine.id, account_id=work, model="m-b"))
    service.record(
        make(clock, 2, user_id=admin, key_id=mine.id, account_id=work, model="m-a", outcome="error")
    )
    service.record(
        make(
            clock,
            3,
            user_id=alice,
            key_id=hers.id,
            account_id=gone,
            model="m-c",
            outcome="rejected",
            cache_miss="ttl_expired",
        )
    )
    service.record(make(clock, 4, user_id=99, key_id=77, account_id=55, model="m-d"))
    await service.flush_records()

    everyone = await service.request_log.filters(owner=None)
    assert everyone["outcomes"] == ["success", "error", "rejected"]  # in the spec's order
    assert everyone["models"] == ["m-a", "m-b", "m-c", "m-d"]
    assert everyone["cache_misses"] == ["ttl_expired"]
    assert everyone["keys"] == [
        {
            "id": mine.id,
            "name": "laptop",
            "prefix": mine.prefix,
            "revoked": False,
            "user_id": admin,
        },
        {"id": hers.id, "name": "phone", "prefix": hers.prefix, "revoked": True, "user_id": alice},
        {"id": 77, "name": "deleted", "prefix": "", "revoked": True, "user_id": None},
    ]
    assert everyone["users"] == [
        {"id": admin, "name": "admin"},
        {"id": alice, "name": "alice"},
        {"id": 99, "name": "deleted"},
    ]
    assert everyone["accounts"] == [
        {"id": work, "name": "work", "deleted": False},
        {"id": gone, "name": "deleted", "deleted": True},
        {"id": 55, "name": "deleted", "deleted": True},
    ]

    hers_only = await service.request_log.filters(owner=alice)
    assert hers_only == {
        "outcomes": ["rejected"],
        "models": ["m-c"],
        "cache_misses": ["ttl_expired"],
        "keys": [{"id": hers.id, "name": "phone", "prefix": hers.prefix, "revoked": True}],
    }


async def test_a_steady_stream_of_records_is_written_in_lingered_batches(
    service, clock, monkeypatch
):
    """A busy proxy adds a record every couple of milliseconds while each write takes a while
    (a slow disk). Every batch waits out its linger first, so the writer commits a few
    transactions a second, not one per handful of records: each transaction costs the
    proxy's CPU, and at high request rates that cost more than all the inserts together."""
    batches: list[int] = []
    real_insert = store_records.insert_records

    def slow_insert(records, now):
        records = list(records)
        batches.append(len(records))
        time.sleep(0.01)  # the writer thread's disk is slow; the loop keeps adding meanwhile
        return real_insert(records, now)

    monkeypatch.setattr(store_records, "insert_records", slow_insert)
    started = time.monotonic()
    for n in range(150):
        service.record(make(clock, n))
        await asyncio.sleep(0.002)
    await service.flush_records()
    elapsed = time.monotonic() - started
    assert sum(batches) == 150  # every record stored, none twice
    assert len(batches) <= elapsed / store_records.LINGER_SECONDS + 1, batches
    assert len(await stored_ids(service)) == 150


async def test_a_clean_batch_is_stored_in_one_go_without_a_warning(service, clock, caplog):
    """Only a batch that fails is retried row by row, with a warning for the operator."""
    caplog.set_level("WARNING", logger="sublane_desktop.store.records")
    stored = await service.store.write(
        lambda: store_records.insert_records([make(clock, n) for n in range(3)], clock.now())
    )
    assert stored == (3, 0)
    assert not [r for r in caplog.records if r.name == "sublane_desktop.store.records"]


@pytest.mark.parametrize("size", [1, 31, 32, 33, 77, store_records.CHUNK_ROWS * 3 + 5])
async def test_a_batch_of_any_size_is_stored_whole_in_arrival_order(service, clock, caplog, size):
    """Batches go in as multi-row INSERTs of power-of-two sizes: every record of a batch that
    is no such size must still land, once, in the order it arrived, without the row-by-row
    retry (which would log a warning) and with every value in its own column."""
    caplog.set_level("WARNING", logger="sublane_desktop.store.records")
    batch = [make(clock, n, input_tokens=n, output_tokens=2 * n) for n in range(size)]
    stored = await service.store.write(lambda: store_records.insert_records(batch, clock.now()))
    assert stored == (size, 0)
    assert not [r for r in caplog.records if r.name == "sublane_desktop.store.records"]
    rows = await service.store.read(
        lambda: list(
            RecordRow.select(RecordRow.id, RecordRow.request_id, RecordRow.input_tokens)
            .order_by(RecordRow.id)
            .tuples()
        )
    )
    assert [r[1] for r in rows] == [f"req_{n:024x}" for n in range(size)]
    assert [r[2] for r in rows] == list(range(size))
    assert [r[0] for r in rows] == sorted({r[0] for r in rows})  # ids ascend, none twice


async def stored_request_ids(service: Service) -> list[str]:
    return await service.store.read(
        lambda: [
            r.request_id for r in RecordRow.select(RecordRow.request_id).order_by(RecordRow.id)
        ]
    )


async def test_records_that_arrive_before_the_writer_starts_are_written_once_it_does(
    service, clock
):
    log = store_records.RequestLog(clock)
    await log.flush()  # nothing to wait for yet: returns at once, it does not hang
    log.add(make(clock, 1))
    log.add(make(clock, 2))
    log.start(service.store)
    await log.flush()
    await log.stop()
    await log.flush()  # after stop too
    assert await stored_request_ids(service) == [f"req_{n:024x}" for n in (1, 2)]


async def test_a_backlog_over_the_limit_before_the_writer_starts_drops_only_the_oldest(
    service, clock
):
    """No writer yet and more than MAX_RECORDS queued: the oldest goes (no pool rejection
    is queued to go first), one record per extra, and flush still sees every record handled."""
    log = store_records.RequestLog(clock)
    for n in range(MAX_RECORDS + 2):
        log.add(make(clock, n))
    log.start(service.store)
    await asyncio.wait_for(log.flush(), 30)
    ids = await stored_request_ids(service)
    assert len(ids) == MAX_RECORDS
    assert ids[0] == f"req_{2:024x}" and ids[-1] == f"req_{MAX_RECORDS + 1:024x}"
    # The dropped ones count as handled exactly once: a later flush still waits for its own.
    log.add(make(clock, MAX_RECORDS + 2))
    await asyncio.wait_for(log.flush(), 30)
    assert (await stored_request_ids(service))[-1] == f"req_{MAX_RECORDS + 2:024x}"
    await log.stop()
