"""Nothing a client sends can make a record disappear (R-FT-2), and a flood of pool
rejections cannot push other members' history out (R-FT-11)."""

from __future__ import annotations

import pytest

from sublane_desktop.core.history import MAX_RECORDS, HistoryQuery
from sublane_desktop.store import records as store_records
from sublane_desktop.store.models import RecordRow
from tests.store.test_records_store import make as make  # the fixtures this module uses
from tests.store.test_records_store import service as service


async def stored(service):
    return await service.store.read(lambda: list(RecordRow.select().order_by(RecordRow.id)))


async def test_odd_strings_and_numbers_never_cost_a_batch(service, clock):
    """One batch from several members: a lone surrogate, a NUL, a number SQLite cannot hold.
    Every record is stored; the odd values are cleaned or blanked; nothing is dropped."""
    batch = [
        make(clock, 1, user_id=1),
        make(clock, 2, user_id=2, model="claude-\ud800-sonnet"),
        make(clock, 3, user_id=3, request_id="req_nul\x00here"),
        make(clock, 4, user_id=2, error_code=None, input_tokens=10**30, output_tokens=5),
        make(clock, 5, user_id=3, request_id="req_\udcff_escaped"),
        make(clock, 6, user_id=1),
    ]
    for record in batch:
        service.record(record)
    await service.flush_records()
    rows = await stored(service)
    assert [r.user_id for r in rows] == [1, 2, 3, 2, 3, 1]
    assert rows[1].model == "claude-\ufffd-sonnet"  # cleaned, not dropped
    assert rows[2].request_id == "req_nulhere"
    assert (rows[3].input_tokens, rows[3].output_tokens) == (None, 5)  # blanked, kept
    assert rows[4].request_id == "req_\ufffd_escaped"
    # Cleaning a record's text leaves its other values alone (no "None" for a missing code).
    assert (rows[2].error_code, rows[2].first_token_ms, rows[2].user_id) == (None, 40, 3)
    assert service.request_log.dropped == 0


async def test_a_row_that_fails_is_retried_alone_and_blanked(service, clock, monkeypatch):
    """The batch fails; its rows go in one by one; the one that still fails goes in with its
    offending value blanked; the rest of the batch is untouched."""
    records = [make(clock, n, user_id=n) for n in range(1, 5)]
    records[2].cached_tokens = 2**64  # the only bad value in the batch
    saved = await service.store.write(lambda: store_records.insert_records(records, clock.now()))
    assert saved == (4, 0)
    rows = await stored(service)
    assert [r.user_id for r in rows] == [1, 2, 3, 4]
    assert [r.cached_tokens for r in rows] == [30, 30, None, 30]


async def test_rows_that_fail_even_blanked_are_counted_dropped_once_each(service, clock):
    """A row SQLite refuses with every odd value blanked (here no member at all, where a
    member is required) is the only kind that counts as dropped; the rest of its batch is
    stored."""
    records = [make(clock, n, user_id=n) for n in range(1, 6)]
    records[1].user_id = records[3].user_id = None
    saved = await service.store.write(lambda: store_records.insert_records(records, clock.now()))
    assert saved == (3, 2)
    assert [r.user_id for r in await stored(service)] == [1, 3, 5]


async def test_a_lost_batch_is_counted_not_hidden(service, clock, monkeypatch):
    def broken(batch, now):
        raise OSError("disk full")

    monkeypatch.setattr(store_records, "insert_records", broken)
    told: list[dict] = []
    service.bus.subscribe("records.added", lambda _topic, payload: told.append(payload))
    service.record(make(clock, 1))
    service.record(make(clock, 2))
    await service.flush_records()
    assert service.request_log.dropped == 2
    service.record(make(clock, 3))
    await service.flush_records()
    assert service.request_log.dropped == 3  # a running count, as /healthz shows it
    assert told == []  # nothing was written: no window is told to show new records


async def test_rejections_are_evicted_before_any_other_outcome(service, clock):
    """A member's real history (oldest of all) survives a flood of account_busy rejections
    from another key that alone would fill the store."""
    for n in range(40):
        service.record(make(clock, n, user_id=2, outcome="success" if n % 2 else "error"))
    for n in range(MAX_RECORDS + 500):
        service.record(
            make(clock, 100 + n, user_id=1, key_id=7, outcome="rejected", error_code="account_busy")
        )
    await service.flush_records()
    page = await service.request_log.page(HistoryQuery(user_id=2), owner=None)
    assert len(page["items"]) == 40
    count = await service.store.read(lambda: RecordRow.select().count())
    assert count == MAX_RECORDS
    # Once only real outcomes are left, the oldest of them go first, as before.
    for n in range(MAX_RECORDS):
        service.record(make(clock, 10_000 + n, user_id=3))
    await service.flush_records()
    rows = await stored(service)
    assert len(rows) == MAX_RECORDS and {r.user_id for r in rows} == {3}


@pytest.mark.parametrize("outcome", ["success", "error", "incomplete", "canceled"])
async def test_the_oldest_real_record_goes_only_when_no_rejection_is_left(service, clock, outcome):
    service.record(make(clock, 0, user_id=2, outcome=outcome))
    for n in range(1, MAX_RECORDS):
        service.record(make(clock, n, user_id=1, outcome="rejected"))
    service.record(make(clock, MAX_RECORDS, user_id=1))  # one over the limit
    await service.flush_records()
    rows = await stored(service)
    assert rows[0].user_id == 2 and rows[0].outcome == outcome
    assert len(rows) == MAX_RECORDS
