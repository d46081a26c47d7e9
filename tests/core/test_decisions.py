"""Where each request goes and why, as the scheduling trace shows it (R-LANE-2..5, R-POOL-5):
the account, the lane and the reason of every path through the scheduler."""

from __future__ import annotations

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model
from sublane_desktop.core.scheduler import WEEK, Decision, main_ramp

MAIN = route_model("claude-sonnet-4-5")
FABLE = route_model("claude-fable-5")
H = 3600.0


def make(n: int = 3, mode: str = "score", limit: int = 4) -> tuple[Pool, FakeClock]:
    clock = FakeClock()
    pool = Pool(clock)
    pool.scheduler.mode = mode
    pool.sync_accounts(AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic",
                                    max_concurrency=limit) for i in range(n))
    return pool, clock


def seen(pool, clock, account, window, util, resets_in=2 * H):
    pool.accounts[account].gauges.apply(
        Observation(window, util, clock.now() + resets_in, clock.now(), "headers"))


def go(pool, route=MAIN, conversation=None, release=True):
    lease = pool.acquire(Demand(group_id=1, route=route, conversation=conversation))
    if release:
        lease.release(Outcome.SUCCESS)
    return lease.account.name


def why(pool) -> tuple:
    d = pool.scheduler.last
    return d.account, d.lane, d.reason


def test_new_conversations_rotate_in_order_and_skip_what_cannot_take_them():
    pool, _ = make()
    assert [go(pool, conversation=f"c{i}") for i in range(4)] == ["acc1", "acc2", "acc3", "acc1"]
    assert why(pool) == ("acc1", "conversation", "rotation")
    pool.set_paused(2, True)  # the cursor points at acc2 now: the next one is acc3
    assert [go(pool, conversation=f"d{i}") for i in range(3)] == ["acc3", "acc1", "acc3"]


def test_when_all_are_over_a_ceiling_rotation_goes_on_and_says_so():
    pool, clock = make(2)
    for account in (1, 2):
        seen(pool, clock, account, "five_hour", 0.95)
    assert [go(pool, conversation=f"c{i}") for i in range(3)] == ["acc1", "acc2", "acc1"]
    assert why(pool) == ("acc1", "conversation", "rotation (over ceiling)")


def test_a_pin_places_new_conversations_even_over_the_fable_ceiling():
    pool, clock = make(2)
    seen(pool, clock, 2, "fable", 0.99, 20 * H)
    pool.switch("acc2")
    assert go(pool, FABLE, conversation="c") == "acc2"
    assert why(pool) == ("acc2", "conversation", "manual pin")


def test_a_pinned_account_still_sends_only_its_probe_after_a_cooldown():
    pool, clock = make(2)
    pool.switch("acc2")
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    lease.release(Outcome.FAILURE)
    pool.switch("acc2")  # the operator insists
    clock.advance(15)
    probe = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert probe.account.name == "acc2" and probe.probe
    assert go(pool, conversation="d") == "acc1"  # the probe is out: nothing more for acc2


def test_a_paused_pinned_account_is_passed_over():
    pool, _ = make(2)
    pool.switch("acc2")
    pool.set_paused(2, True)
    assert go(pool) == "acc1"


def test_lanes_and_reasons_of_independent_requests():
    pool, _clock = make(2)
    pool.switch("acc2")
    go(pool, FABLE)
    assert why(pool) == ("acc2", "fable", "manual pin")
    go(pool, MAIN)
    assert why(pool) == ("acc2", "main", "manual pin")
    pool.accounts[2].pinned_until = None
    go(pool, MAIN)
    assert why(pool)[1:] == ("main", "anchor kept")


def test_the_anchor_holds_at_exactly_25_percent_and_yields_beyond():
    pool, clock = make(2)
    for account in (1, 2):
        pool.accounts[account].ceilings = {"five_hour_max": 1.0}
    pool.scheduler.current[(1, "anthropic")] = 1
    seen(pool, clock, 1, "five_hour", 0.5)  # headroom 0.5
    seen(pool, clock, 2, "five_hour", 0.375)  # headroom 0.625: exactly 1.25x
    assert go(pool) == "acc1" and why(pool)[2] == "anchor kept"
    seen(pool, clock, 2, "five_hour", 0.3)  # headroom 0.7: 1.4x
    assert go(pool) == "acc2"
    assert why(pool) == ("acc2", "main", "beats anchor by margin")
    assert pool.scheduler.last.score == pytest.approx(0.7)


def test_round_robin_moves_to_the_account_after_a_gated_anchor():
    pool, _ = make(3, mode="round_robin")
    assert go(pool) == "acc1"  # a fresh lane starts at the first account
    assert why(pool) == ("acc1", "main", "round robin: next after gated anchor")
    pool.scheduler.current[(1, "anthropic")] = 2
    assert go(pool) == "acc2" and why(pool)[2] == "round robin: anchor kept"
    pool.set_paused(2, True)
    assert go(pool) == "acc3"
    pool.set_paused(3, True)
    assert go(pool) == "acc1"  # wraps around


def test_every_account_over_a_ceiling_and_the_least_loaded_full_is_busy():
    pool, clock = make(2, limit=1)
    seen(pool, clock, 1, "five_hour", 0.92)
    seen(pool, clock, 2, "five_hour", 0.97)
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert held.account.name == "acc1"
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN))
    assert err.value.code == "account_busy"


def test_a_new_conversation_with_every_account_cooling_hears_how_long():
    pool, clock = make(1)
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE)
    clock.advance(5)
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert (err.value.code, err.value.retry_after) == ("account_cooling", 10)


def test_cost_aware_placement_says_so_and_moves_the_cursor_past_its_choice():
    pool, _ = make(3, mode="cost_aware")
    first = go(pool, conversation="c")
    assert why(pool) == (first, "conversation", "best score (cost aware)")
    pool.scheduler.mode = "score"
    after = {"acc1": "acc2", "acc2": "acc3", "acc3": "acc1"}[first]
    assert go(pool, conversation="d") == after


def test_the_ramp_reaches_its_top_only_at_the_reset():
    from sublane_desktop.core.gauges import GaugeSet

    g = GaugeSet()
    g.apply(Observation("seven_day", 0.1, 1000.5, 1000.0, "poll"))
    assert main_ramp(g, 1000.0) == 1.0 + 3.0 * (1.0 - 0.5 / WEEK)


def test_decision_is_recorded_for_spills_too():
    pool, _ = make(2, limit=1)
    pool.scheduler.current[(1, "anthropic")] = 1
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert go(pool) == "acc2"
    assert why(pool) == ("acc2", "main", "anchor busy, spill")
    held.release(Outcome.SUCCESS)
    assert Decision("a", "main", "x").score is None
