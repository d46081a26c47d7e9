"""When quota reads happen (R-GAUGE-3, R-LANE-8, R-POOL-11), on a fake clock with a scripted
reader: every read the refresher sends is one the upstream usage endpoint would see."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.quota import (
    MAX_ENDPOINT_BACKOFF_SECONDS,
    PollMarks,
    QuotaReadError,
    QuotaRefresher,
)
from sublane_desktop.core.routing import route_model

CLAUDE = route_model("claude-sonnet-4-5")


@dataclass
class Acc:
    id: int
    revision: int = 1


class Upstream:
    """A usage endpoint: records reads, can hold them open, can fail them."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.reads: list[int] = []
        self.gate: asyncio.Event | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail: QuotaReadError | None = None
        self.answer: list[Observation] | None = None
        self.published: list[tuple[int, int, list[Observation]]] = []

    async def read(self, account: Acc) -> list[Observation]:
        self.reads.append(account.id)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.fail is not None:
                raise self.fail
            if self.answer is not None:
                return self.answer
            return [Observation("five_hour", 0.4, None, self.clock.now(), "poll")]
        finally:
            self.in_flight -= 1

    async def publish(self, account: Acc, revision: int, observations: list[Observation]) -> bool:
        self.published.append((account.id, revision, observations))
        return True


def make(cap_pool: Pool | None = None) -> tuple[QuotaRefresher, Upstream, FakeClock]:
    clock = cap_pool.clock if cap_pool is not None else FakeClock()
    up = Upstream(clock)
    pool = cap_pool or Pool(clock)
    refresher = QuotaRefresher(
        clock,
        read=up.read,
        publish=up.publish,
        take_slot=pool.try_metadata_slot,
        give_slot=pool.release_metadata_slot,
    )
    return refresher, up, clock


async def settle(tasks) -> list[bool]:
    return list(await asyncio.gather(*tasks))


async def until(predicate, what: str) -> None:
    for _ in range(10_000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


async def test_one_read_per_account_per_five_minutes():
    refresher, up, clock = make()
    a = Acc(1)
    assert await settle(refresher.want([a])) == [True]
    clock.advance(299)
    assert refresher.want([a]) == []  # traffic inside the floor starts nothing
    assert up.reads == [1]
    clock.advance(1)  # exactly 5 minutes after the last read started
    await settle(refresher.want([a]))
    assert up.reads == [1, 1]


async def test_one_account_inside_its_floor_does_not_hold_up_the_next():
    """Each account has its own floor: a freshly read account first in the list is skipped,
    and the stale one after it is read all the same."""
    refresher, up, clock = make()
    fresh, stale = Acc(1), Acc(2)
    await settle(refresher.want([fresh]))
    clock.advance(60)
    await settle(refresher.want([fresh, stale]))
    assert up.reads == [1, 2]


async def test_a_person_skips_the_floor_but_not_the_endpoints_retry_after():
    refresher, up, clock = make()
    a = Acc(1)
    await settle(refresher.want([a]))
    await settle(refresher.want([a], force=True))  # Refresh pressed
    assert up.reads == [1, 1]
    up.fail = QuotaReadError("rate limited", retry_after=600)
    assert await settle(refresher.want([a], force=True)) == [False]
    up.fail = None
    clock.advance(599)
    assert refresher.want([a], force=True) == []
    refresher.lift_floor()  # reset-usage does not lift an endpoint's retry-after either
    assert refresher.want([a]) == []
    assert up.reads == [1, 1, 1]
    clock.advance(1)
    await settle(refresher.want([a], force=True))
    assert up.reads == [1, 1, 1, 1]


async def test_reset_usage_lifts_the_floor_so_feeds_repopulate_at_once():
    """R-LANE-8: right after reset-usage, the next traffic reads again."""
    refresher, up, clock = make()
    a, b = Acc(1), Acc(2)
    await settle(refresher.want([a, b]))
    clock.advance(10)
    assert refresher.want([a, b]) == []
    refresher.lift_floor()
    await settle(refresher.want([a, b]))
    assert up.reads == [1, 2, 1, 2]
    assert refresher.want([a, b]) == []  # and the floor runs again from these reads


async def test_at_most_two_reads_at_once_and_duplicates_coalesce():
    refresher, up, _clock = make()
    up.gate = asyncio.Event()
    accounts = [Acc(i) for i in range(1, 5)]
    tasks = refresher.want(accounts)
    await until(lambda: up.in_flight == 2, "two reads in flight")
    again = refresher.want(accounts, force=True)  # a person presses Refresh meanwhile
    assert again == tasks  # the same reads, joined
    up.gate.set()
    await settle(tasks)
    assert sorted(up.reads) == [1, 2, 3, 4] and up.max_in_flight == 2
    assert refresher.reads == 4


async def test_a_failed_read_keeps_publishing_nothing_and_lets_the_floor_run():
    refresher, up, clock = make()
    a = Acc(1)
    up.fail = QuotaReadError("boom")  # no retry-after
    assert await settle(refresher.want([a])) == [False]
    assert up.published == []
    up.fail = None
    clock.advance(60)
    assert refresher.want([a]) == []  # a failed read still counts against the floor
    assert await settle(refresher.want([a], force=True)) == [True]  # no retry-after: no block


async def test_an_empty_answer_publishes_nothing():
    refresher, up, _clock = make()
    up.answer = []
    assert await settle(refresher.want([Acc(1)])) == [False]
    assert up.published == []


async def test_publish_carries_the_revision_the_read_started_under():
    """R-GAUGE-4: a re-auth during a read makes its result land under the old revision."""
    refresher, up, _clock = make()
    up.gate = asyncio.Event()
    a = Acc(1, revision=3)
    tasks = refresher.want([a])
    await until(lambda: up.in_flight == 1, "read in flight")
    a.revision = 4
    up.gate.set()
    await settle(tasks)
    assert [(i, r) for i, r, _ in up.published] == [(1, 3)]


async def test_quota_reads_wait_for_room_under_the_global_cap():
    """R-POOL-11: a read takes a global slot, never a model-request slot; with the cap full,
    it is not sent (and may be tried again at once when room returns)."""
    pool = Pool(FakeClock(), cap=2)
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic", max_concurrency=2)])
    refresher, up, _clock = make(pool)
    leases = [pool.acquire(Demand(group_id=1, route=CLAUDE)) for _ in range(2)]
    assert await settle(refresher.want([Acc(1)])) == [False]
    assert up.reads == [] and pool.metadata_in_flight == 0
    leases[0].release(Outcome.SUCCESS)
    up.gate = asyncio.Event()
    tasks = refresher.want([Acc(1)])  # the skipped read did not start the floor
    await until(lambda: up.in_flight == 1, "read in flight")
    assert pool.accounts[1].in_flight == 1  # only the model request; the read holds no slot
    with pytest.raises(GatewayError) as err:  # but it counts against the global cap
        pool.acquire(Demand(group_id=1, route=CLAUDE))
    assert err.value.code == "capacity_exhausted"
    up.gate.set()
    await settle(tasks)
    assert up.reads == [1] and pool.metadata_in_flight == 0
    leases[1].release(Outcome.SUCCESS)


async def test_a_quota_read_never_clears_a_cooldown():
    pool = Pool(FakeClock(), cap=8)
    account = AccountState(id=1, name="acc1", provider="anthropic")
    pool.sync_accounts([account])
    refresher, up, _clock = make(pool)
    pool.acquire(Demand(group_id=1, route=CLAUDE)).release(Outcome.FAILURE)
    until_before = account.cooldown_until
    await settle(refresher.want([account]))
    assert up.reads == [1]
    assert account.cooldown_until == until_before and account.failure_streak == 1
    assert pool.state_of(account) == "cooling"


async def test_a_failed_read_says_why_in_the_log(caplog):
    refresher, up, _clock = make()
    up.fail = QuotaReadError("usage endpoint answered 503")
    with caplog.at_level("WARNING", logger="sublane_desktop.core.quota"):
        await settle(refresher.want([Acc(7)]))
    assert "quota read for account 7 failed: usage endpoint answered 503" in caplog.text


def test_metadata_slots_count_against_the_cap_one_by_one():
    pool = Pool(FakeClock(), cap=3)
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic", max_concurrency=3)])
    lease = pool.acquire(Demand(group_id=1, route=CLAUDE))
    assert pool.try_metadata_slot() is True
    assert pool.try_metadata_slot() is True
    assert pool.try_metadata_slot() is False  # 1 model request + 2 reads = the cap of 3
    with pytest.raises(GatewayError):
        pool.acquire(Demand(group_id=1, route=CLAUDE))
    pool.release_metadata_slot()
    lease.release(Outcome.SUCCESS)
    assert pool.try_metadata_slot() is True and pool.metadata_in_flight == 2


def test_every_reset_and_reauth_starts_a_quota_epoch_never_seen_before():
    """R-FT-9: a reading taken before a reset-usage or a re-auth can never land after it."""
    pool = Pool(FakeClock())
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic")])
    account = pool.accounts[1]
    epochs = [account.quota_epoch]
    for step in ("reset", "reset", "reauth", "reset"):
        if step == "reset":
            pool.reset_usage()
        else:
            pool.sync_accounts(
                [
                    AccountState(
                        id=1, name="acc1", provider="anthropic", revision=account.revision + 1
                    )
                ]
            )
        epochs.append(account.quota_epoch)
    assert len(set(epochs)) == len(epochs)


async def test_traffic_reads_again_the_moment_a_retry_after_ends_and_skips_only_the_blocked():
    refresher, up, clock = make()
    a, b = Acc(1), Acc(2)
    up.fail = QuotaReadError("rate limited", retry_after=600)
    await settle(refresher.want([a]))
    up.fail = None
    clock.advance(300)
    await settle(refresher.want([a, b]))  # a is blocked; b behind it is still read
    assert up.reads == [1, 2]
    clock.advance(10)
    refresher.lift_floor()
    refresher._last_start[1] = clock.now()  # a read of a just started: inside its floor
    await settle(refresher.want([a, b]))  # a inside its floor; b behind it is still read
    assert up.reads == [1, 2, 2]
    clock.advance(290)  # exactly when a's retry-after ends, a person asks
    await settle(refresher.want([a], force=True))
    assert up.reads == [1, 2, 2, 1]


async def test_the_published_readings_are_the_ones_read():
    refresher, up, clock = make()
    up.answer = [Observation("fable", 0.3, None, clock.now(), "poll")]
    await settle(refresher.want([Acc(1)]))
    assert up.published == [(1, 1, up.answer)]


async def test_an_account_already_being_read_does_not_hold_up_the_next_one():
    refresher, up, _clock = make()
    up.gate = asyncio.Event()
    first = refresher.want([Acc(1)])
    await until(lambda: up.in_flight == 1, "the first read in flight")
    again = refresher.want([Acc(1), Acc(2)])  # 1 coalesces; 2 behind it still starts
    assert again[0] is first[0] and len(again) == 2
    await until(lambda: up.in_flight == 2, "the second read in flight")
    up.gate.set()
    await settle(again)
    assert up.reads == [1, 2]


async def test_reset_usage_while_a_read_waits_for_the_cap_does_not_break_that_read():
    pool = Pool(FakeClock(), cap=1)
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic", max_concurrency=1)])
    refresher, up, _clock = make(pool)
    lease = pool.acquire(Demand(group_id=1, route=CLAUDE))
    tasks = refresher.want([Acc(1)])
    refresher.lift_floor()  # a person resets usage before the read got its turn
    assert await settle(tasks) == [False]  # skipped for the full cap, not crashed
    assert up.reads == [] and refresher.running == 0
    lease.release(Outcome.SUCCESS)
    assert await settle(refresher.want([Acc(1)])) == [True]


async def test_an_endpoint_retry_after_is_believed_for_at_most_a_day():
    refresher, up, clock = make()
    a = Acc(1)
    up.fail = QuotaReadError("rate limited", retry_after=1e12)  # nonsense from the endpoint
    await settle(refresher.want([a], force=True))
    up.fail = None
    clock.advance(MAX_ENDPOINT_BACKOFF_SECONDS - 1)
    assert refresher.want([a], force=True) == []
    clock.advance(1)
    assert await settle(refresher.want([a], force=True)) == [True]
    assert up.reads == [1, 1]


async def test_what_it_remembers_and_restores_across_a_restart():
    """R-OBS-2: every change of an account's floor start or back-off is told to `remember`;
    a new refresher given those values holds the same floor and back-off."""
    clock = FakeClock()
    up = Upstream(clock)
    pool = Pool(clock)
    saved: dict[int, PollMarks] = {}

    def remember(account_id, marks):
        saved[account_id] = marks

    def refresher() -> QuotaRefresher:
        return QuotaRefresher(
            clock,
            read=up.read,
            publish=up.publish,
            take_slot=pool.try_metadata_slot,
            give_slot=pool.release_metadata_slot,
            remember=remember,
        )

    first = refresher()
    read, held = Acc(1), Acc(2)
    start = clock.now()
    await settle(first.want([read]))
    up.fail = QuotaReadError("rate limited", retry_after=3600)
    await settle(first.want([held]))
    up.fail = None
    assert saved == {1: (start, None, 1), 2: (start, start + 3600, 1)}

    clock.advance(200)
    second = refresher()
    second.restore(dict(saved))
    assert second.want([read, held]) == []  # inside the floor, inside the back-off
    clock.advance(100)
    await settle(second.want([read, held]))  # the floor is over; the back-off is not
    assert up.reads == [1, 2, 1]
    clock.advance(3300)
    await settle(second.want([held]))
    assert up.reads == [1, 2, 1, 2]


def test_restored_deadlines_that_the_clock_left_behind_are_bounded():
    """A wall clock put back while SubLane was closed: the floor holds at most its own 5
    minutes from now, a back-off at most a day; ended ones are dropped."""
    refresher, _up, clock = make()
    now = clock.now()
    refresher.restore(
        {
            1: (now + 7 * 86400, None, 1),  # a read "started" a week from now
            2: (None, now + 30 * 86400, None),  # a back-off a month long
            3: (now - 600, now - 1, 1),  # both over
        }
    )
    assert not refresher.due(Acc(1), now + 299) and refresher.due(Acc(1), now + 300)
    assert not refresher.due(Acc(2), now + 86399) and refresher.due(Acc(2), now + 86400)
    assert refresher.due(Acc(3), now)


async def test_a_new_revision_voids_the_floor_but_not_the_endpoints_retry_after():
    """R-OBS-2 / R-UI-14: the floor belongs to the credential and lifecycle it was taken under.
    An account signed in again or re-enabled (here: while no server ran, so only the restored
    marks know) is due at once; the usage endpoint's own retry-after still holds."""
    refresher, up, clock = make()
    now = clock.now()
    refresher.restore({1: (now - 60, None, 1), 2: (now - 60, now + 600, 1)})
    same, resigned, held = Acc(1, revision=1), Acc(1, revision=2), Acc(2, revision=2)
    assert not refresher.due(same, now)  # same revision: the floor a minute ago holds
    assert refresher.due(resigned, now)
    assert refresher.want([held]) == []  # new revision, but the endpoint asked to wait
    await settle(refresher.want([resigned]))
    assert up.reads == [1]
    assert not refresher.due(resigned, clock.now())  # its own read starts a floor of its own
