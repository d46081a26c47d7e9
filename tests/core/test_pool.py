"""The pool runtime of SPEC §4, driven by a fake clock (no network, no DB)."""

from __future__ import annotations

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model

CLAUDE = route_model("claude-sonnet-4-5")


class Recorder:
    def __init__(self) -> None:
        self.runtime: list[tuple[int, dict]] = []
        self.bindings: list[tuple[int, str, int]] = []
        self.deleted: list[int] = []
        self.lifecycle: list[tuple[int, bool, int]] = []

    def save_runtime(self, account_id, fields):
        self.runtime.append((account_id, dict(fields)))

    def save_binding(self, group_id, digest, account_id):
        self.bindings.append((group_id, digest, account_id))

    def delete_bindings(self, account_id):
        self.deleted.append(account_id)

    def save_lifecycle(self, account_id, enabled, revision):
        self.lifecycle.append((account_id, enabled, revision))


def make_pool(*limits: int, cap: int = 8) -> tuple[Pool, FakeClock, Recorder]:
    clock = FakeClock()
    rec = Recorder()
    pool = Pool(clock, cap=cap, persistence=rec)
    pool.sync_accounts(
        AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic", max_concurrency=limit)
        for i, limit in enumerate(limits)
    )
    return pool, clock, rec


def conv(name: str | None = None) -> Demand:
    return Demand(group_id=1, route=CLAUDE, conversation=name)


def test_bound_conversation_saturated_gets_account_busy_and_others_flow_elsewhere():
    pool, _, rec = make_pool(1, 1)
    first = pool.acquire(conv("c1"))
    with pytest.raises(GatewayError) as err:
        pool.acquire(conv("c1"))
    assert err.value.code == "account_busy" and err.value.status == 429
    assert 1 <= err.value.retry_after <= 300
    other = pool.acquire(conv(None))  # independent traffic goes to the free account
    assert other.account.id != first.account.id
    assert rec.bindings == [(1, "c1", first.account.id)]


def test_independent_requests_never_touch_affinity():
    pool, _, rec = make_pool(2, 2)
    for _ in range(3):
        pool.acquire(conv(None)).release(Outcome.SUCCESS)
    assert pool.bindings == {} and rec.bindings == []


def test_new_conversations_rotate_and_stay_bound():
    pool, _, _ = make_pool(4, 4, 4)
    placed = [pool.acquire(conv(f"c{i}")).account.id for i in range(3)]
    assert sorted(placed) == [1, 2, 3]
    again = pool.acquire(conv("c0"))
    assert again.account.id == placed[0]


def test_cooling_bound_conversation_gets_account_cooling_with_remaining_time():
    pool, clock, _ = make_pool(2, 2)
    lease = pool.acquire(conv("c1"))
    bound = lease.account
    lease.release(Outcome.FAILURE)
    clock.advance(5)
    with pytest.raises(GatewayError) as err:
        pool.acquire(conv("c1"))
    assert err.value.code == "account_cooling"
    assert err.value.retry_after == 10  # 15 s ladder step, 5 s gone
    # It never moves by itself, even though the other account is free.
    assert pool.bindings[(1, "c1")] == bound.id


def test_cooldown_ladder_doubles_and_caps_and_retry_after_wins():
    pool, clock, _ = make_pool(8)
    account = pool.accounts[1]
    expected = [15, 30, 60, 120, 240, 480, 900, 900]
    for seconds in expected:
        clock.advance(10_000)  # past any cooldown; the probe is the next request
        pool.acquire(conv(None)).release(Outcome.FAILURE)
        assert account.cooldown_until - clock.now() == seconds
    clock.advance(10_000)
    pool.acquire(conv(None)).release(Outcome.FAILURE, retry_after=42)
    assert account.cooldown_until - clock.now() == 42


def test_same_tick_older_success_cannot_clear_newer_failure():
    pool, _clock, _ = make_pool(2)
    older = pool.acquire(conv(None))
    newer = pool.acquire(conv(None))
    newer.release(Outcome.FAILURE)
    older.release(Outcome.SUCCESS)  # same clock tick, admitted earlier
    assert pool.state_of(pool.accounts[1]) == "cooling"
    assert pool.accounts[1].failure_streak == 1


def test_one_probe_after_cooldown_then_full_concurrency_on_success():
    pool, clock, _ = make_pool(3)
    pool.acquire(conv(None)).release(Outcome.FAILURE)
    clock.advance(15)
    assert pool.state_of(pool.accounts[1]) == "probing"
    probe = pool.acquire(conv(None))
    assert probe.probe
    with pytest.raises(GatewayError) as err:
        pool.acquire(conv(None))
    assert err.value.code == "account_busy"
    probe.release(Outcome.SUCCESS)
    leases = [pool.acquire(conv(None)) for _ in range(3)]
    assert pool.state_of(pool.accounts[1]) == "busy"
    assert not any(lease.probe for lease in leases)


def test_probe_waits_for_in_flight_requests_and_failure_cools_again():
    pool, clock, _ = make_pool(2)
    slow = pool.acquire(conv(None))  # admitted before the failure
    pool.acquire(conv(None)).release(Outcome.FAILURE)
    clock.advance(15)
    with pytest.raises(GatewayError):
        pool.acquire(conv(None))  # something still in flight: no probe yet
    slow.release(Outcome.NEUTRAL)
    probe = pool.acquire(conv(None))
    probe.release(Outcome.FAILURE)
    assert pool.state_of(pool.accounts[1]) == "cooling"
    assert pool.accounts[1].cooldown_until - clock.now() == 30


def test_resume_clears_cooldown_and_ignores_outcomes_admitted_before_it():
    pool, _clock, rec = make_pool(2)
    late = pool.acquire(conv(None))
    pool.acquire(conv(None)).release(Outcome.FAILURE)
    pool.resume("acc1")
    assert pool.state_of(pool.accounts[1]) == "ok"
    late.release(Outcome.FAILURE)  # admitted before the resume: ignored
    assert pool.state_of(pool.accounts[1]) == "ok"
    assert pool.accounts[1].failure_streak == 0
    assert rec.runtime[-1][1]["runtime_revision"] == 1


def test_lowering_a_limit_lets_running_requests_finish():
    pool, _, _ = make_pool(2)
    a, b = pool.acquire(conv(None)), pool.acquire(conv(None))
    pool.set_limit("acc1", 1)
    with pytest.raises(GatewayError):
        pool.acquire(conv(None))
    a.release(Outcome.SUCCESS)
    with pytest.raises(GatewayError):  # still at the new limit
        pool.acquire(conv(None))
    b.release(Outcome.SUCCESS)
    pool.acquire(conv(None))


@pytest.mark.parametrize("bad", [0, 9, "2", None, 2.0, True])
def test_limit_must_be_an_integer_from_1_to_8(bad):
    pool, _, _ = make_pool(2)
    with pytest.raises(ValueError):
        pool.set_limit("acc1", bad)
    assert pool.accounts[1].max_concurrency == 2


def test_release_is_exactly_once():
    pool, _, _ = make_pool(2)
    lease = pool.acquire(conv(None))
    assert lease.release(Outcome.SUCCESS) is True
    assert lease.release(Outcome.FAILURE) is False
    assert pool.in_flight == 0 and pool.accounts[1].in_flight == 0
    assert pool.accounts[1].failure_streak == 0


def test_global_cap_counts_every_account():
    pool, _, _ = make_pool(8, 8, cap=3)
    for _ in range(3):
        pool.acquire(conv(None))
    with pytest.raises(GatewayError) as err:
        pool.acquire(conv(None))
    assert err.value.code == "capacity_exhausted"


def test_pause_is_a_hard_gate_and_frees_its_conversations():
    pool, _, rec = make_pool(2, 2)
    lease = pool.acquire(conv("c1"))
    lease.release(Outcome.SUCCESS)
    pool.set_paused(lease.account.id, True)
    assert (1, "c1") not in pool.bindings and rec.deleted == [lease.account.id]
    moved = pool.acquire(conv("c1"))
    assert moved.account.id != lease.account.id
    assert pool.state_of(lease.account) == "paused"


def test_auth_failure_is_a_hard_gate_until_the_credential_changes():
    pool, _, _ = make_pool(2)
    pool.acquire(conv(None)).release(Outcome.AUTH_FAILURE)
    assert pool.state_of(pool.accounts[1]) == "auth_failed"
    with pytest.raises(GatewayError):
        pool.acquire(conv(None))
    fresh = AccountState(id=1, name="acc1", provider="anthropic", revision=2)
    pool.sync_accounts([fresh])  # re-auth bumps the lifecycle revision
    assert pool.state_of(pool.accounts[1]) == "ok"


def test_no_account_for_a_provider():
    pool, _, _ = make_pool(2)
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=route_model("gpt-5")))
    assert err.value.code == "no_account"
    with pytest.raises(GatewayError):
        pool.acquire(Demand(group_id=2, route=CLAUDE))  # not in that group


def test_disable_is_a_hard_gate_frees_conversations_and_the_pin_and_keeps_settings():
    pool, clock, rec = make_pool(3, 2)
    lease = pool.acquire(conv("c1"))
    lease.release(Outcome.SUCCESS)
    first = lease.account
    pool.switch(first.id)
    assert pool.scheduler.pinned(first, clock.now())
    pool.set_enabled(first.id, False)
    assert pool.state_of(first) == "disabled"
    assert (1, "c1") not in pool.bindings and first.id in rec.deleted
    assert not pool.scheduler.pinned(first, clock.now())
    assert first.max_concurrency == 3  # settings are kept
    assert rec.lifecycle[-1] == (first.id, False, first.revision)
    for name in ("c1", None, "c2"):  # nothing, bound or not, reaches a disabled account
        other = pool.acquire(conv(name))
        assert other.account.id != first.id
        other.release(Outcome.SUCCESS)
    with pytest.raises(GatewayError):
        only, _, _ = make_pool(2)
        only.set_enabled(1, False)
        only.acquire(conv(None))


def test_enable_advances_the_revision_so_older_outcomes_are_ignored():
    pool, _, rec = make_pool(2)
    account = pool.accounts[1]
    before = pool.acquire(conv(None))  # admitted before the account was disabled
    pool.set_enabled(1, False)
    revision = account.revision
    pool.set_enabled(1, True)
    assert account.revision == revision + 1
    assert rec.lifecycle[-1] == (1, True, revision + 1)
    before.release(Outcome.FAILURE)  # a stale failure must not cool the re-enabled account
    assert pool.state_of(account) == "ok"
    assert pool.acquire(conv(None)).account.id == 1


def test_resume_neither_unpauses_nor_repairs_auth():
    """R-POOL-9: resume clears the cooldown only; a paused or signed-out account stays out."""
    pool, _clock, rec = make_pool(2, 2)
    a, b = pool.accounts[1], pool.accounts[2]
    pool.acquire(conv(None)).release(Outcome.FAILURE)  # acc1 cools
    pool.set_paused("acc1", True)
    pool.resume("acc1")
    assert a.cooldown_until is None and a.failure_streak == 0
    assert a.paused and pool.state_of(a) == "paused"
    assert rec.runtime[-1] == (
        1,
        {
            "paused": True,
            "auth_failed": False,
            "cooldown_until": None,
            "failure_streak": 0,
            "runtime_revision": 1,
            "fable_cooldown_until": None,
            "fable_streak": 0,
            "holds": {"evidence": {}, "families": {}},
            "pinned_until": None,
        },
    )
    lease = pool.acquire(Demand(group_id=1, route=CLAUDE, conversation=None))
    assert lease.account is b
    lease.release(Outcome.AUTH_FAILURE)
    pool.resume("acc2")
    assert b.auth_failed and pool.state_of(b) == "auth_failed"
    with pytest.raises(GatewayError):
        pool.acquire(conv(None))


def test_reauth_voids_the_old_credentials_gauges():
    """R-GAUGE-4: observations of the old credential do not survive a re-auth."""
    from sublane_desktop.core.gauges import Observation

    pool, clock, _ = make_pool(2)
    a = pool.accounts[1]
    a.gauges.apply(Observation("five_hour", 0.7, clock.now() + 3600, clock.now(), "poll"))
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic")])  # same revision
    assert a.gauges.five_hour.utilization == 0.7
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic", revision=2)])
    assert a.gauges.five_hour.cold and a.revision == 2


def test_each_resume_starts_a_new_runtime_revision():
    pool, _clock, rec = make_pool(2)
    pool.resume("acc1")
    between = pool.acquire(conv(None))  # admitted after the first resume
    pool.resume("acc1")
    between.release(Outcome.FAILURE)  # admitted before the second: ignored
    assert pool.state_of(pool.accounts[1]) == "ok"
    assert rec.runtime[-1] == (
        1,
        {
            "paused": False,
            "auth_failed": False,
            "cooldown_until": None,
            "failure_streak": 0,
            "runtime_revision": 2,
            "fable_cooldown_until": None,
            "fable_streak": 0,
            "holds": {"evidence": {}, "families": {}},
            "pinned_until": None,
        },
    )


def test_enabling_again_persists_the_next_runtime_revision():
    pool, _clock, rec = make_pool(2)
    pool.resume("acc1")  # runtime revision 1
    pool.set_enabled("acc1", False)
    pool.set_enabled("acc1", False)  # no change: nothing written
    assert len(rec.lifecycle) == 1
    pool.set_enabled("acc1", True)
    assert rec.runtime[-1] == (
        1,
        {
            "paused": False,
            "auth_failed": False,
            "cooldown_until": None,
            "failure_streak": 0,
            "runtime_revision": 2,
            "fable_cooldown_until": None,
            "fable_streak": 0,
            "holds": {"evidence": {}, "families": {}},
            "pinned_until": None,
        },
    )


def test_limits_are_1_to_8_inclusive_and_a_bad_one_says_so():
    pool, _, _ = make_pool(2)
    assert pool.set_limit("acc1", 8).max_concurrency == 8
    assert pool.set_limit(1, 1).max_concurrency == 1
    with pytest.raises(ValueError, match=r"^max_concurrency must be an integer from 1 to 8$"):
        pool.set_limit("acc1", 9)


def test_pause_and_auth_failure_are_persisted_for_that_account():
    pool, _, rec = make_pool(2, 2)
    pool.set_paused("acc2", True)
    assert rec.runtime[-1] == (
        2,
        {
            "paused": True,
            "auth_failed": False,
            "cooldown_until": None,
            "failure_streak": 0,
            "runtime_revision": 0,
            "fable_cooldown_until": None,
            "fable_streak": 0,
            "holds": {"evidence": {}, "families": {}},
            "pinned_until": None,
        },
    )
    pool.mark_auth_failed(pool.accounts[1])
    assert rec.runtime[-1] == (
        1,
        {
            "paused": False,
            "auth_failed": True,
            "cooldown_until": None,
            "failure_streak": 0,
            "runtime_revision": 0,
            "fable_cooldown_until": None,
            "fable_streak": 0,
            "holds": {"evidence": {}, "families": {}},
            "pinned_until": None,
        },
    )


def test_switch_frees_only_the_other_same_provider_accounts_conversations():
    clock = FakeClock()
    rec = Recorder()
    pool = Pool(clock, persistence=rec)
    pool.sync_accounts(
        [
            AccountState(id=1, name="a1", provider="anthropic", max_concurrency=4),
            AccountState(id=2, name="a2", provider="anthropic", max_concurrency=4),
            AccountState(id=3, name="c1", provider="codex", max_concurrency=4),
        ]
    )
    gpt = route_model("gpt-5")
    for name in ("x", "y"):
        pool.acquire(conv(name)).release(Outcome.SUCCESS)
    pool.acquire(Demand(group_id=1, route=gpt, conversation="g")).release(Outcome.SUCCESS)
    assert pool.bindings == {(1, "x"): 1, (1, "y"): 2, (1, "g"): 3}
    pool.switch("a2")
    assert pool.bindings == {(1, "y"): 2, (1, "g"): 3}  # a2's own and codex's stay bound
    assert rec.deleted == [1]
    assert pool.acquire(conv("x")).account.id == 2  # re-placed on the pinned account


def test_conversation_leases_say_they_are_bound_so_no_correlation_id_is_added():
    pool, _, _ = make_pool(2, 2)
    first = pool.acquire(conv("c1"))
    first.release(Outcome.SUCCESS)
    again = pool.acquire(conv("c1"))
    alone = pool.acquire(conv(None))
    assert (first.bound, again.bound, alone.bound) == (True, True, False)


def test_a_bound_conversation_sends_the_one_recovery_probe_after_a_cooldown():
    pool, clock, _ = make_pool(3, 3)
    lease = pool.acquire(conv("c1"))
    lease.release(Outcome.FAILURE)
    clock.advance(15)
    probe = pool.acquire(conv("c1"))
    assert probe.probe and probe.account is lease.account
    code = None
    try:
        pool.acquire(conv("c1"))
    except GatewayError as err:
        code = err.code
    assert code == "account_busy"  # one probe at a time, even for its own conversation
    probe.release(Outcome.SUCCESS)
    assert not pool.acquire(conv("c1")).probe


def test_a_new_conversation_can_be_the_probe():
    pool, clock, _ = make_pool(3)
    pool.acquire(conv(None)).release(Outcome.FAILURE)
    clock.advance(15)
    lease = pool.acquire(conv("fresh"))
    assert lease.probe and lease.bound


FABLE_ROUTE = route_model("claude-fable-5")


def fable_429(pool):
    pool.acquire(Demand(group_id=1, route=FABLE_ROUTE)).release(Outcome.FABLE_FAILURE, status=429)


def test_fable_rests_climb_the_ladder_and_a_success_starts_it_again():
    pool, clock, rec = make_pool(2)
    account = pool.accounts[1]
    fable_429(pool)
    assert account.fable_cooldown_until - clock.now() == 15
    assert rec.runtime[-1] == (1, {**account.runtime_fields(), "fable_streak": 1})
    clock.advance(15)
    fable_429(pool)
    assert account.fable_cooldown_until - clock.now() == 30  # the second in a row
    clock.advance(30)
    pool.acquire(Demand(group_id=1, route=FABLE_ROUTE)).release(Outcome.SUCCESS)
    assert account.fable_streak == 0
    assert rec.runtime[-1] == (1, account.runtime_fields())  # the healed streak is stored
    fable_429(pool)
    assert account.fable_cooldown_until - clock.now() == 15


def test_a_success_with_nothing_to_heal_writes_nothing():
    pool, _clock, rec = make_pool(2)
    pool.acquire(conv(None)).release(Outcome.SUCCESS)
    pool.acquire(conv(None)).release(Outcome.SUCCESS)
    assert rec.runtime == []


def test_every_outcome_that_changes_an_account_is_stored_for_that_account():
    pool, _clock, rec = make_pool(2, 2)
    pool.set_paused(1, True)
    rec.runtime.clear()
    pool.acquire(conv(None)).release(Outcome.AUTH_FAILURE)  # lands on acc2
    assert rec.runtime == [(2, pool.accounts[2].runtime_fields())]
    assert rec.runtime[-1][1]["auth_failed"] is True


def test_one_fable_rest_healed_and_a_failure_are_stored_for_their_account():
    pool, clock, rec = make_pool(2)
    fable_429(pool)
    clock.advance(15)
    pool.acquire(Demand(group_id=1, route=FABLE_ROUTE)).release(Outcome.SUCCESS)
    assert rec.runtime[-1] == (1, {**pool.accounts[1].runtime_fields(), "fable_streak": 0})
    pool.acquire(conv(None)).release(Outcome.FAILURE)
    assert rec.runtime[-1][0] == 1 and rec.runtime[-1][1]["failure_streak"] == 1


def saved_pin(rec: Recorder, account_id: int) -> object:
    """The pin end last written for the account (R-OBS-2), or a marker when none was."""
    writes = [fields for aid, fields in rec.runtime if aid == account_id]
    return writes[-1]["pinned_until"] if writes else "never written"


def test_a_switch_saves_the_new_pin_and_the_end_of_the_old_one():
    pool, clock, rec = make_pool(2, 2)
    pool.switch("acc1")
    assert saved_pin(rec, 1) == clock.now() + 300
    clock.advance(60)
    pool.switch("acc2")
    assert saved_pin(rec, 2) == clock.now() + 300
    assert saved_pin(rec, 1) is None  # a restart must not bring the first pin back


def test_a_pin_released_by_a_429_is_saved_even_when_the_outcome_itself_is_ignored():
    """The lease began before a resume (older runtime revision): its 429 changes no cooldown,
    but it still releases the pin (R-LANE-2), and that release must outlive a restart."""
    pool, _clock, rec = make_pool(2, 2)
    lease = pool.acquire(conv(None))
    pool.switch(lease.account.name)
    pool.resume(lease.account.name)  # outcomes admitted before this are ignored (R-POOL-9)
    lease.release(Outcome.FAILURE, status=429)
    assert lease.account.pinned_until is None
    assert saved_pin(rec, lease.account.id) is None


def test_disabling_a_pinned_account_saves_the_released_pin():
    pool, _clock, rec = make_pool(2, 2)
    pool.switch("acc2")
    pool.set_enabled("acc2", False)
    assert saved_pin(rec, 2) is None


def test_a_loaded_pin_keeps_its_end_but_never_more_than_5_minutes_from_now():
    clock = FakeClock()
    pool = Pool(clock)
    now = clock.now()
    pool.sync_accounts(
        [
            AccountState(id=1, name="a", provider="anthropic", pinned_until=now + 120),
            AccountState(id=2, name="b", provider="codex", pinned_until=now + 86400),
        ]
    )
    assert pool.accounts[1].pinned_until == now + 120  # what was left, not a fresh 5 minutes
    assert pool.accounts[2].pinned_until == now + 300  # a clock put back cannot stretch it
