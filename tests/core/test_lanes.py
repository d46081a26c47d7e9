"""SPEC §5 lanes with the seed's own numbers, on a fake clock."""

from __future__ import annotations

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import GaugeSet, Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model
from sublane_desktop.core.scheduler import (
    Ceilings,
    fable_score,
    fable_urgency,
    main_ramp,
)

H = 3600.0
FABLE = route_model("claude-fable-5")
MAIN = route_model("claude-sonnet-4-5")


def observe(
    account: AccountState,
    clock: FakeClock,
    window: str,
    util: float,
    resets_in: float | None,
    source: str = "headers",
) -> None:
    resets = clock.now() + resets_in if resets_in is not None else None
    account.gauges.apply(Observation(window, util, resets, clock.now(), source))


def make(n: int = 2, mode: str = "score") -> tuple[Pool, FakeClock]:
    clock = FakeClock()
    pool = Pool(clock)
    pool.scheduler.mode = mode
    pool.sync_accounts(
        AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic", max_concurrency=4)
        for i in range(n)
    )
    return pool, clock


def pick(pool: Pool, route=FABLE) -> str:
    lease = pool.acquire(Demand(group_id=1, route=route))
    lease.release(Outcome.SUCCESS)
    return lease.account.name


def test_seed_numbers_full_bucket_resetting_in_3h_beats_93_percent_in_38h():
    clock = FakeClock()
    soon, later = GaugeSet(), GaugeSet()
    soon.apply(Observation("fable", 0.0, clock.now() + 3 * H, clock.now(), "poll"))
    later.apply(Observation("fable", 0.07, clock.now() + 38 * H, clock.now(), "poll"))
    assert fable_urgency(soon, clock.now()) == pytest.approx(56.0)
    assert fable_urgency(later, clock.now()) == pytest.approx(4.42, abs=0.01)
    assert fable_score(soon, Ceilings(), clock.now()) > 10 * fable_score(
        later, Ceilings(), clock.now()
    )


def test_main_ramp_38h_vs_3h_is_only_1_19x_and_does_not_switch():
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(a, clock, "seven_day", 0.2, 38 * H)
    observe(b, clock, "seven_day", 0.2, 3 * H)
    assert main_ramp(b.gauges, clock.now()) / main_ramp(a.gauges, clock.now()) == pytest.approx(
        1.19, abs=0.01
    )
    pool.scheduler.current[(1, "anthropic")] = a.id
    assert pick(pool, MAIN) == "acc1"  # inside the 25% margin: the anchor holds


def test_fable_lane_burns_the_perishable_bucket_first():
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(a, clock, "fable", 0.07, 38 * H)
    observe(b, clock, "fable", 0.0, 3 * H)
    pool.scheduler.current[(1, "anthropic")] = a.id  # the operator's current account
    assert pick(pool) == "acc2"
    assert pool.scheduler.fable_current[(1, "anthropic")] == b.id
    assert pool.scheduler.current[(1, "anthropic")] == a.id  # main lane untouched
    assert pick(pool, MAIN) == "acc1"


def test_cold_bucket_is_held_by_anchoring_never_hunted():
    pool, clock = make()
    pool.scheduler.current[(1, "anthropic")] = 1
    # acc2's bucket is known and modestly urgent; acc1 is cold (urgency 1x): within margin.
    observe(pool.accounts[2], clock, "fable", 0.0, 6 * 86400)
    assert pick(pool) == "acc1"
    assert pool.scheduler.fable_current[(1, "anthropic")] == 1  # seeded from current


def test_fable_ceiling_is_a_hard_gate_for_fable_only():
    pool, clock = make()
    a = pool.accounts[1]
    pool.scheduler.current[(1, "anthropic")] = a.id
    observe(a, clock, "fable", 0.985, 20 * H)
    assert pick(pool) == "acc2"
    assert pick(pool, MAIN) == "acc1"


def test_pin_lapses_after_5_minutes_survives_ceilings_but_not_a_429():
    pool, clock = make()
    _a, b = pool.accounts[1], pool.accounts[2]
    observe(b, clock, "fable", 0.99, 20 * H)  # over the Fable ceiling: preemptively excluded
    pool.switch("acc2")
    assert pick(pool) == "acc2" and pick(pool, MAIN) == "acc2"
    clock.advance(299)
    assert pick(pool) == "acc2"
    clock.advance(2)
    pool.evaluate()
    assert b.pinned_until is None
    assert pick(pool) == "acc1"
    # A new pin is released by a 429 at once.
    pool.switch("acc2")
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    lease.release(Outcome.FAILURE, retry_after=None, status=429)
    assert b.pinned_until is None


def test_main_lane_preemptive_ceiling_exactly_at_ceiling_is_still_eligible():
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(b, clock, "five_hour", 0.95, 2 * H)  # b is over its ceiling: steered away from
    observe(a, clock, "five_hour", 0.90, 2 * H)  # a sits exactly at it: still eligible
    assert pick(pool, MAIN) == "acc1"
    observe(a, clock, "five_hour", 0.91, 2 * H)
    observe(b, clock, "five_hour", 0.50, 2 * H)
    assert pick(pool, MAIN) == "acc2"
    observe(b, clock, "five_hour", 0.97, 2 * H)
    # Both over: the ceilings steer, they do not refuse; the least-loaded serves.
    assert pick(pool, MAIN) == "acc1"
    assert pool.scheduler.last.reason.startswith("all over ceiling")


def test_per_account_override_of_a_ceiling():
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(b, clock, "five_hour", 0.99, 2 * H)
    observe(a, clock, "five_hour", 0.93, 2 * H)
    pool.scheduler.current[(1, "anthropic")] = b.id
    a.ceilings = {"five_hour_max": 0.95}
    assert pick(pool, MAIN) == "acc1"
    assert pool.scheduler.last.reason == "best score (no eligible anchor)"


def test_fresh_exhaustion_gates_bound_conversations_with_quota_exhausted():
    pool, clock = make()
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    lease.release(Outcome.SUCCESS)
    observe(lease.account, clock, "five_hour", 1.0, 3 * H)
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert err.value.code == "quota_exhausted"
    assert err.value.retry_after == 120  # the next freshness check, not the 3 h reset
    assert pool.state_of(lease.account) == "quota_exhausted"
    clock.advance(121)  # stale: unknown again, not exhausted
    pool.acquire(Demand(group_id=1, route=MAIN, conversation="c")).release(Outcome.SUCCESS)


def test_fable_scope_park_leaves_non_fable_traffic_on_the_account():
    pool, _clock = make(1)
    lease = pool.acquire(Demand(group_id=1, route=FABLE))
    lease.release(Outcome.FABLE_FAILURE, status=429)
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=FABLE))
    assert err.value.code == "account_cooling"
    assert pick(pool, MAIN) == "acc1"
    assert pool.state_of(pool.accounts[1]) == "ok"


def test_round_robin_keeps_the_anchor_absolutely_until_gated():
    pool, clock = make(3, mode="round_robin")
    observe(pool.accounts[2], clock, "fable", 0.0, 3 * H)  # hugely urgent, but RR ignores it
    pool.scheduler.current[(1, "anthropic")] = 1
    assert pick(pool, MAIN) == "acc1"
    pool.set_paused("acc1", True)
    assert pick(pool, MAIN) == "acc2"
    pool.set_paused("acc1", False)
    assert pick(pool, MAIN) == "acc2"  # the new anchor stays


def test_tick_abandons_a_paused_current():
    pool, _clock = make()
    pool.scheduler.current[(1, "anthropic")] = 1
    pool.scheduler.fable_current[(1, "anthropic")] = 1
    pool.accounts[1].paused = True
    pool.evaluate()
    assert (1, "anthropic") not in pool.scheduler.current
    assert (1, "anthropic") not in pool.scheduler.fable_current


def test_reset_usage_makes_every_gauge_cold():
    pool, clock = make()
    observe(pool.accounts[1], clock, "five_hour", 0.5, H)
    pool.reset_usage()
    assert all(pool.accounts[1].gauges.get(w).cold for w in ("five_hour", "seven_day", "fable"))


def test_freshest_observation_wins_regardless_of_feed():
    clock = FakeClock()
    g = GaugeSet()
    g.apply(Observation("five_hour", 0.4, None, clock.now(), "headers"))
    g.apply(Observation("five_hour", 0.9, None, clock.now() - 30, "poll"))  # older poll lands late
    assert g.five_hour.utilization == 0.4 and g.five_hour.source == "headers"
    g.apply(Observation("five_hour", 0.6, None, clock.now() + 1, "poll"))
    assert g.five_hour.utilization == 0.6 and g.five_hour.source == "poll"


def test_window_past_reset_reads_zero_and_is_stale():
    clock = FakeClock()
    g = GaugeSet()
    g.apply(Observation("seven_day", 1.0, clock.now() + 10, clock.now(), "headers"))
    assert g.seven_day.exhausted(clock.now())
    clock.advance(11)
    assert g.seven_day.reading(clock.now()) == 0.0 and g.seven_day.stale(clock.now())
    assert not g.seven_day.exhausted(clock.now())


def test_preemptive_ceiling_ignores_stale_readings():
    """R-LANE-5: the main-lane ceilings act on fresh data only; a stale 95% is unknown now."""
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(b, clock, "five_hour", 0.95, 4 * H)
    clock.advance(121)  # b's reading is now stale
    observe(a, clock, "five_hour", 0.95, 4 * H)  # a's is fresh: a is steered away from
    assert pick(pool, MAIN) == "acc2"
    assert pool.scheduler.last.reason != "all over ceiling: least loaded"
    # New conversations are placed the same way.
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert lease.account.name == "acc2"


def test_bound_conversation_stays_put_over_a_preemptive_ceiling():
    """R-POOL-4: ceilings steer placement, not conversations already bound."""
    pool, clock = make()
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    lease.release(Outcome.SUCCESS)
    bound = lease.account
    observe(bound, clock, "five_hour", 0.97, 2 * H)  # fresh, over the 90% ceiling
    observe(bound, clock, "seven_day", 0.995, 90 * H)  # and over the 99% one
    for _ in range(3):
        again = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
        again.release(Outcome.SUCCESS)
        assert again.account is bound
    # A new conversation is steered to the other account.
    other = pool.acquire(Demand(group_id=1, route=MAIN, conversation="new"))
    assert other.account is not bound


def test_fable_urgency_is_clamped_at_100():
    """R-LANE-3: a bucket resetting in a minute is at most 100x urgent, so a nearly spent one
    does not outrank a full bucket resetting in two hours."""
    clock = FakeClock()
    minute = GaugeSet()
    minute.apply(Observation("fable", 0.88, clock.now() + 60, clock.now(), "poll"))
    assert fable_urgency(minute, clock.now()) == 100.0
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    observe(a, clock, "fable", 0.88, 60)  # 0.10 headroom x 100 = 10
    observe(b, clock, "fable", 0.0, 2 * H)  # 0.90 headroom x 84 = 75.6
    assert pick(pool) == "acc2"
    assert pool.scheduler.last.score == pytest.approx(0.90 * 84)


def test_urgency_floor_is_1_and_a_far_reset_ramps_from_1():
    clock = FakeClock()
    g = GaugeSet()
    g.apply(Observation("fable", 0.1, clock.now() + 8 * 86400 - 1000, clock.now(), "poll"))
    assert fable_urgency(g, clock.now()) == 1.0


def test_rejected_flag_benches_an_account_below_100_percent():
    """R-LANE-1: an explicit denial is exhaustion whatever the percentage says."""
    pool, clock = make(1)
    a = pool.accounts[1]
    a.gauges.apply(
        Observation("five_hour", 0.6, clock.now() + 2 * H, clock.now(), "headers", rejected=True)
    )
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN))
    assert err.value.code == "quota_exhausted"
    assert pool.state_of(a) == "quota_exhausted"
    pool2, clock2 = make(1)
    f = pool2.accounts[1]
    f.gauges.apply(
        Observation("fable", 0.5, clock2.now() + 20 * H, clock2.now(), "headers", rejected=True)
    )
    with pytest.raises(GatewayError) as err:
        pool2.acquire(Demand(group_id=1, route=FABLE))
    assert err.value.code == "quota_exhausted"
    assert pick(pool2, MAIN) == "acc1"  # the Fable denial leaves other models alone


def test_auth_failure_on_a_pinned_account_releases_the_pin():
    """R-LANE-2: a recorded auth failure on the pinned account clears the pin at once."""
    pool, clock = make()
    b = pool.accounts[2]
    pool.switch("acc2")
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    assert lease.account is b
    lease.release(Outcome.AUTH_FAILURE, status=401)
    assert b.pinned_until is None and not pool.scheduler.pinned(b, clock.now())
    # A repaired credential does not bring the old pin back.
    pool.sync_accounts(
        [
            AccountState(id=1, name="acc1", provider="anthropic", max_concurrency=4),
            AccountState(id=2, name="acc2", provider="anthropic", max_concurrency=4, revision=2),
        ]
    )
    assert b.pinned_until is None


def test_refresh_rejection_on_a_pinned_account_releases_the_pin():
    pool, _clock = make()
    b = pool.accounts[2]
    pool.switch("acc2")
    pool.mark_auth_failed(b)
    assert b.pinned_until is None and pool.state_of(b) == "auth_failed"
    assert pick(pool, MAIN) == "acc1"


def anchored(pool) -> tuple:
    lane = (1, "anthropic")
    return pool.scheduler.current.get(lane), pool.scheduler.fable_current.get(lane)


def anchor_both(pool, account_id: int) -> None:
    pool.scheduler.current[(1, "anthropic")] = account_id
    pool.scheduler.fable_current[(1, "anthropic")] = account_id


@pytest.mark.parametrize("gate", ["disabled", "auth_failed", "cooling", "exhausted", "deleted"])
def test_tick_abandons_a_gated_current_on_both_lanes(gate):
    pool, clock = make()
    anchor_both(pool, 1)
    a = pool.accounts[1]
    if gate == "disabled":
        a.enabled = False
    elif gate == "auth_failed":
        a.auth_failed = True
    elif gate == "cooling":
        a.cooldown_until = clock.now() + 1
    elif gate == "exhausted":
        observe(a, clock, "seven_day", 1.0, 50 * H)
    else:
        pool.sync_accounts([pool.accounts[2]])
    pool.evaluate()
    assert anchored(pool) == (None, None)


def test_tick_keeps_a_healthy_current_and_one_whose_cooldown_just_ended():
    pool, clock = make()
    anchor_both(pool, 1)
    pool.accounts[1].cooldown_until = clock.now()  # over at this very instant
    observe(pool.accounts[1], clock, "five_hour", 0.99, H)  # over a ceiling, not exhausted
    pool.evaluate()
    assert anchored(pool) == (1, 1)


@pytest.mark.parametrize("gate", ["fable_exhausted", "fable_cooling"])
def test_tick_drops_only_the_fable_anchor_for_a_fable_only_gate(gate):
    pool, clock = make()
    anchor_both(pool, 1)
    a = pool.accounts[1]
    if gate == "fable_exhausted":
        observe(a, clock, "fable", 1.0, 20 * H)
    else:
        a.fable_cooldown_until = clock.now() + 1
    pool.evaluate()
    assert anchored(pool) == (1, None)
    a.fable_cooldown_until = clock.now()  # a Fable rest that just ended does not count
    a.gauges.clear()
    anchor_both(pool, 1)
    pool.evaluate()
    assert anchored(pool) == (1, 1)


def test_a_pin_lapses_exactly_at_five_minutes_and_a_new_pin_replaces_the_old():
    pool, clock = make(3)
    codex = AccountState(id=9, name="gpt", provider="codex")
    pool.sync_accounts([*pool.accounts.values(), codex])
    pool.switch("gpt")
    pool.switch("acc1")
    pool.switch("acc2")  # the later switch wins; acc1's pin is gone, codex's stays
    assert pool.accounts[1].pinned_until is None
    assert pool.accounts[2].pinned_until == clock.now() + 300
    assert codex.pinned_until == clock.now() + 300
    clock.advance(299.5)
    pool.evaluate()
    assert pool.accounts[2].pinned_until is not None
    clock.advance(0.5)
    pool.evaluate()
    assert pool.accounts[2].pinned_until is None and codex.pinned_until is None


def test_a_pin_anchors_both_lanes_in_every_group_of_the_account():
    clock = FakeClock()
    pool = Pool(clock)
    pool.sync_accounts(
        [
            AccountState(id=1, name="a", provider="anthropic", group_ids=(1, 2)),
            AccountState(id=2, name="b", provider="anthropic", group_ids=(1, 2, 3)),
        ]
    )
    pool.switch("b")
    for group in (1, 2, 3):
        assert pool.scheduler.current[(group, "anthropic")] == 2
        assert pool.scheduler.fable_current[(group, "anthropic")] == 2
    runtime = [
        (pool.scheduler.is_current(a), pool.scheduler.is_fable_current(a))
        for a in pool.accounts.values()
    ]
    assert runtime == [(False, False), (True, True)]


def test_cost_aware_mode_moves_a_conversation_off_a_gated_account_and_says_so():
    from sublane_desktop.core.scheduler import Decision

    pool, clock = make(mode="cost_aware")
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    lease.release(Outcome.SUCCESS)
    bound = lease.account
    bound.cooldown_until = clock.now() + 100
    moved = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert moved.account is not bound
    assert pool.scheduler.last == Decision(
        moved.account.name, "conversation", f"moved from {bound.name}"
    )
    assert pool.bindings[(1, "c")] == moved.account.id
    pool.scheduler.mode = "score"  # the seeds' modes never move a bound conversation
    assert (
        pool.scheduler.move_conversation(
            moved.account,
            list(pool.accounts.values()),
            Demand(group_id=1, route=MAIN, conversation="c"),
            clock.now(),
        )
        is None
    )


def test_antigravity_accounts_are_scored_by_the_requested_family():
    """R-AG-4 in the main lane: the account with more of the asked family left takes the
    anchor; a family another model draws from does not count."""
    clock = FakeClock()
    pool = Pool(clock)
    pool.sync_accounts(
        AccountState(id=i, name=f"g{i}", provider="antigravity", max_concurrency=4) for i in (1, 2)
    )
    g1, g2 = pool.accounts[1], pool.accounts[2]
    observe(g1, clock, "gemini_pro", 0.85, 3 * H, "poll")
    observe(g1, clock, "claude", 0.0, 3 * H, "poll")
    observe(g2, clock, "gemini_pro", 0.10, 3 * H, "poll")
    observe(g2, clock, "claude", 0.80, 3 * H, "poll")
    pro = route_model("gemini-3-pro-high")
    claude = route_model("antigravity/claude-sonnet-4-5")
    assert pool.scheduler.score(g2, Demand(1, pro), clock.now()) == pytest.approx(0.8)
    assert pool.scheduler.score(g1, Demand(1, pro), clock.now()) == pytest.approx(0.05)
    assert pick(pool, pro) == "g2"
    assert pick(pool, claude) == "g1"


def test_a_pin_loaded_at_start_is_current_before_any_request_unless_it_may_not_serve():
    """R-OBS-2 with R-LANE-2: a pin a restart kept sends new requests to its account, so that
    account is its lanes' current one from the start, not from the first request. A pinned
    account the CLI disabled while no server ran is not (the next request goes elsewhere)."""
    clock = FakeClock()
    pool = Pool(clock)
    pinned = clock.now() + 180
    pool.sync_accounts(
        [
            AccountState(id=1, name="a", provider="anthropic", group_ids=(1, 2)),
            AccountState(
                id=2, name="b", provider="anthropic", group_ids=(1, 2), pinned_until=pinned
            ),
        ]
    )
    a, b = pool.accounts[1], pool.accounts[2]
    assert [pool.scheduler.is_current(x) for x in (a, b)] == [False, True]
    assert [pool.scheduler.is_fable_current(x) for x in (a, b)] == [False, True]
    assert pick(pool, MAIN) == "b"

    later = Pool(clock)
    later.sync_accounts(
        [
            AccountState(id=1, name="a", provider="anthropic"),
            AccountState(id=2, name="b", provider="anthropic", enabled=False, pinned_until=pinned),
        ]
    )
    assert not later.scheduler.is_current(later.accounts[2])
    assert pick(later, MAIN) == "a"


def test_a_pinned_account_back_from_a_cooldown_is_current_again_with_its_first_request():
    """A 5xx streak cools a pinned account without releasing the pin (only a 429 or an auth
    failure does); the tick drops it as current meanwhile. Once the pin sends requests there
    again, the views say it is current again (they said another account while it served)."""
    pool, clock = make()
    a, b = pool.accounts[1], pool.accounts[2]
    pool.switch("acc2")
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    lease.release(Outcome.FAILURE, status=503)
    assert b.pinned_until is not None and b.cooling(clock.now())
    pool.evaluate()
    assert pick(pool, MAIN) == "acc1"
    assert pool.scheduler.is_current(a) and not pool.scheduler.is_current(b)
    clock.advance(b.cooldown_until - clock.now())
    assert pick(pool, MAIN) == "acc2"  # the recovery probe, sent by the pin
    assert pool.scheduler.is_current(b) and not pool.scheduler.is_current(a)
