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
    pool.sync_accounts(
        AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic", max_concurrency=limit)
        for i in range(n)
    )
    return pool, clock


def seen(pool, clock, account, window, util, resets_in=2 * H):
    pool.accounts[account].gauges.apply(
        Observation(window, util, clock.now() + resets_in, clock.now(), "headers")
    )


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


def test_exactly_at_the_five_hour_ceiling_stays_eligible_whatever_the_order():
    pool, clock = make(2)
    seen(pool, clock, 1, "five_hour", 0.95)  # over
    seen(pool, clock, 2, "five_hour", 0.90)  # exactly at it
    assert go(pool) == "acc2"
    seen(pool, clock, 1, "five_hour", 0.0)  # an unused window is never over a ceiling
    seen(pool, clock, 2, "five_hour", 0.0)
    pool.scheduler.current[(1, "anthropic")] = 1
    assert go(pool) == "acc1" and why(pool)[2] == "anchor kept"


def test_a_fresh_seven_day_reading_over_its_ceiling_steers_away():
    pool, clock = make(2)
    pool.scheduler.current[(1, "anthropic")] = 1
    seen(pool, clock, 1, "seven_day", 0.995, 50 * H)
    assert go(pool) == "acc2"
    assert why(pool) == ("acc2", "main", "best score (no eligible anchor)")


def test_all_over_a_ceiling_is_logged_with_the_account_and_lane():
    pool, clock = make(2)
    for account in (1, 2):
        seen(pool, clock, account, "five_hour", 0.95)
    go(pool, MAIN)
    assert why(pool) == ("acc1", "main", "all over ceiling: least loaded")


def test_the_probe_goes_through_every_path_of_independent_selection():
    # pinned, all over a ceiling, and as a spill target: a recovering account takes its probe
    pool, clock = make(2)
    pool.switch("acc2")
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE)
    pool.switch("acc2")
    clock.advance(15)
    assert pool.acquire(Demand(group_id=1, route=MAIN)).probe  # the pinned account's probe
    pool, clock = make(2)
    for account in (1, 2):
        seen(pool, clock, account, "five_hour", 0.95, resets_in=10 * H)
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE)  # acc1 cools
    pool.accounts[2].paused = True
    clock.advance(15)
    for account in (1, 2):
        seen(pool, clock, account, "five_hour", 0.95, resets_in=10 * H)
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    assert lease.account.name == "acc1" and lease.probe


def test_a_spill_goes_to_the_best_account_with_room():
    pool, clock = make(4, limit=1)
    pool.scheduler.current[(1, "anthropic")] = 1
    seen(pool, clock, 2, "five_hour", 0.1)  # the best other, but full
    seen(pool, clock, 3, "five_hour", 0.6)
    seen(pool, clock, 4, "five_hour", 0.3)  # the best other with room
    held = [pool.acquire(Demand(group_id=1, route=MAIN, conversation=c)) for c in ("x",)]
    assert held[0].account.name == "acc1"
    pool.bindings.clear()
    second = pool.acquire(Demand(group_id=1, route=MAIN, conversation="y"))
    assert second.account.name != "acc1"
    full = second.account
    pool.bindings.clear()
    pool.scheduler.current[(1, "anthropic")] = 1
    others = {2: 0.1, 3: 0.6, 4: 0.3}
    best_free = max(
        (i for i in others if pool.accounts[i] is not full), key=lambda i: 1 - others[i]
    )
    assert go(pool) == f"acc{best_free}"
    assert why(pool)[2] == "anchor busy, spill"


def test_a_spill_may_be_a_probe():
    pool, clock = make(2, limit=1)
    pool.scheduler.current[(1, "anthropic")] = 1
    pool.accounts[2].paused = True
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert held.account.name == "acc1"
    pool.accounts[2].paused = False
    pool.accounts[2].failure_streak = 1  # its cooldown is over: one probe may go
    seen(pool, clock, 2, "five_hour", 0.2)
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    assert lease.account.name == "acc2" and lease.probe


def test_round_robin_skips_every_gated_account_after_the_anchor_in_order():
    pool, _ = make(4, mode="round_robin")
    pool.scheduler.current[(1, "anthropic")] = 2
    pool.set_paused(2, True)
    pool.set_paused(3, True)
    assert go(pool) == "acc4"


def test_over_ceiling_rotation_skips_forward_and_moves_its_cursor():
    pool, clock = make(3)
    for account in (1, 2, 3):
        seen(pool, clock, account, "five_hour", 0.95)
    assert go(pool, conversation="c0") == "acc1"
    pool.set_paused(2, True)
    assert [go(pool, conversation=f"c{i}") for i in range(1, 5)] == ["acc3", "acc1", "acc3", "acc1"]


def test_cost_aware_placement_with_no_room_anywhere_is_busy():
    pool, _ = make(1, mode="cost_aware", limit=1)
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert err.value.code == "account_busy"
    held.release(Outcome.SUCCESS)


def test_exactly_at_the_seven_day_ceiling_stays_eligible():
    pool, clock = make(2)
    seen(pool, clock, 1, "seven_day", 0.995, 50 * H)  # over
    seen(pool, clock, 2, "seven_day", 0.99, 50 * H)  # exactly at it
    assert go(pool) == "acc2"


def test_a_spill_onto_an_account_whose_cooldown_just_ended_is_its_probe():
    pool, clock = make(2, limit=1)
    pool.scheduler.current[(1, "anthropic")] = 1
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert held.account.name == "acc1"
    pool.accounts[2].failure_streak = 1
    pool.accounts[2].cooldown_until = clock.now() - 1  # over a second ago
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    assert lease.account.name == "acc2" and lease.probe


def test_a_single_account_is_taken_without_scores_and_the_trace_says_whether_it_anchored():
    pool, clock = make(n=1)
    seen(pool, clock, 1, "five_hour", 0.5)
    go(pool)
    assert why(pool) == ("acc1", "main", "best score (no eligible anchor)")
    go(pool)
    assert why(pool) == ("acc1", "main", "anchor kept")
    assert pool.scheduler.last.score == pytest.approx(0.90 - 0.5)  # worked out when read
