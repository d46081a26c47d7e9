"""The cost_aware mode (R-SIM-4): every hard gate and the pin hold; moves only when they pay.

The scheduler's and the pool's own tests run again here with every Scheduler forced into
cost_aware mode; the ones it deliberately answers differently (a bound conversation on a gated
account moves instead of waiting for a 429) are replaced by tests of what it does instead.
"""

from __future__ import annotations

import pytest

from sublane_desktop.core.cache_miss import PreviousTurn, Turn
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.policies.cost_aware import CACHE_TTL, warm_chance
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model
from sublane_desktop.core.scheduler import Scheduler
from tests.core import test_lanes as lanes
from tests.core import test_pool as pool_tests

H = 3600.0
MAIN = route_model("claude-sonnet-4-5")
FABLE = route_model("claude-fable-5")

# The seeds' contract that a bound conversation waits on its account: cost_aware moves it.
DIFFERS = {
    "test_cooling_bound_conversation_gets_account_cooling_with_remaining_time",
    "test_fresh_exhaustion_gates_bound_conversations_with_quota_exhausted",
    "test_bound_conversation_stays_put_over_a_preemptive_ceiling",
}
REUSED = [
    getattr(module, name)
    for module in (lanes, pool_tests)
    for name in dir(module)
    if name.startswith("test_") and name not in DIFFERS
]


@pytest.fixture
def cost_aware_everywhere(monkeypatch):
    monkeypatch.setattr(
        Scheduler,
        "mode",
        property(lambda self: "cost_aware", lambda self, value: None),
        raising=False,
    )


@pytest.mark.parametrize("test", REUSED, ids=lambda t: t.__name__)
def test_scheduler_and_pool_rules_hold_in_cost_aware_mode(test, cost_aware_everywhere, request):
    if test.__name__ == "test_round_robin_keeps_the_anchor_absolutely_until_gated":
        pytest.skip("round_robin's own contract")
    params = getattr(test, "pytestmark", [])
    for mark in params:
        if mark.name == "parametrize":
            for value in mark.args[1]:
                test(value)
            return
    test()


def make(*limits: int) -> tuple[Pool, FakeClock]:
    clock = FakeClock()
    pool = Pool(clock)
    pool.scheduler.mode = "cost_aware"
    pool.sync_accounts(
        AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic", max_concurrency=limit)
        for i, limit in enumerate(limits)
    )
    return pool, clock


def observe(
    account: AccountState, clock: FakeClock, window: str, util: float, resets_in: float
) -> None:
    account.gauges.apply(Observation(window, util, clock.now() + resets_in, clock.now(), "headers"))


def remember(
    pool: Pool, name: str, account_id: int, ended_at: float, total_input: int, route=MAIN
) -> None:
    """The relay's part: the turn's facts go to the memory the scheduler reads, per model."""
    pool.scheduler.conversations.settle(
        1,
        name,
        Turn(account_id, ended_at, total_input, 0),
        ended_at=ended_at,
        warm_tokens=total_input,
        model=route.upstream_model,
    )


def turn(
    pool: Pool, clock: FakeClock, name: str, total_input: int = 60_000, route=MAIN
) -> AccountState:
    lease = pool.acquire(Demand(group_id=1, route=route, conversation=name))
    remember(pool, name, lease.account.id, clock.now(), total_input, route)
    lease.release(Outcome.SUCCESS)
    return lease.account


def test_a_conversation_on_an_exhausted_account_moves_instead_of_429():
    pool, clock = make(4, 4)
    first = turn(pool, clock, "c")
    observe(first, clock, "five_hour", 1.0, 3 * H)
    assert turn(pool, clock, "c").id != first.id
    assert pool.bindings[(1, "c")] != first.id


def test_a_cooling_account_strands_nobody_but_with_nowhere_to_go_the_gate_answers():
    pool, clock = make(4, 4)
    first = turn(pool, clock, "c")
    lease = pool.acquire(Demand(group_id=1, route=MAIN))
    while lease.account.id != first.id:
        lease.release(Outcome.SUCCESS)
        lease = pool.acquire(Demand(group_id=1, route=MAIN))
    lease.release(Outcome.FAILURE)
    assert first.cooling(clock.now())
    assert turn(pool, clock, "c").id != first.id  # moved, never served by the cooling one
    pool.set_paused(pool.bindings[(1, "c")], True)  # now the only other account is paused
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert err.value.code == "account_cooling"


def test_a_conversation_moved_to_a_recovering_account_goes_as_its_one_probe():
    """R-POOL-7 holds for moves: the account the conversation moves to failed before and its
    cooldown is over, so the moved turn is its single probe."""
    pool, clock = make(4, 4)
    first = turn(pool, clock, "c")
    other = next(a for a in pool.accounts.values() if a is not first)
    first.max_concurrency = 1
    held = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))  # first is full now
    failing = pool.acquire(Demand(group_id=1, route=MAIN))
    assert failing.account is other
    failing.release(Outcome.FAILURE)
    held.release(Outcome.SUCCESS)
    clock.advance(3600)  # the cooldown is over; nothing has proven the account healthy yet
    assert other.recovering(clock.now())
    observe(first, clock, "five_hour", 1.0, 3 * H)  # the bound account is used up: move
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert lease.account is other and lease.probe
    assert pool.bindings[(1, "c")] == other.id


def test_warm_conversation_stays_near_the_ceiling_cold_one_leaves_first():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "warm")
    b = pool.accounts[2] if a.id == 1 else pool.accounts[1]
    pool.bindings[(1, "cold")] = a.id
    # a nears its 5h ceiling (0.90); b has a little more room: 0.08 vs 0.05 headroom, 1.6x.
    observe(a, clock, "five_hour", 0.85, 3 * H)
    observe(b, clock, "five_hour", 0.82, 3 * H)
    remember(pool, "warm", a.id, clock.now() - 10, 60_000)
    remember(pool, "cold", a.id, clock.now() - CACHE_TTL - 5, 60_000)
    # Warm, 60k tokens: a move must beat 1.25 + 6 = 7.25x; 1.6x does not. It stays.
    assert turn(pool, clock, "warm").id == a.id
    # Cold: nothing to lose, and a is within NEAR_LIMIT of its ceiling: it leaves first.
    assert turn(pool, clock, "cold").id == b.id
    observe(a, clock, "five_hour", 0.905, 3 * H)
    remember(pool, "warm", a.id, clock.now() - 10, 60_000)
    assert turn(pool, clock, "warm").id == b.id  # over the ceiling: nobody is stranded


def test_a_warm_prefix_raises_the_bar_for_a_perishability_move():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "c", total_input=150_000)
    b = pool.accounts[2] if a.id == 1 else pool.accounts[1]
    observe(a, clock, "seven_day", 0.5, 6 * 86400)  # a: headroom 0.49 x ramp ~1.4
    observe(a, clock, "five_hour", 0.1, 3 * H)
    observe(b, clock, "seven_day", 0.0, 3 * H)  # b: headroom 0.89 x ramp ~4: ~5x better
    observe(b, clock, "five_hour", 0.1, 3 * H)
    # Warm with 150k tokens: the bar is 1.25 + 15 = 16.25x; 5x does not pay for the re-read.
    assert turn(pool, clock, "c", total_input=150_000).id == a.id
    # Warm with a 5k prefix: 1.75x; 5x does.
    remember(pool, "c", a.id, clock.now(), 5_000)
    assert turn(pool, clock, "c", total_input=5_000).id == b.id
    # Cold with 150k: nothing to re-read that was not lost already; it moves.
    pool.bindings[(1, "c")] = a.id
    remember(pool, "c", a.id, clock.now() - CACHE_TTL - 1, 150_000)
    assert turn(pool, clock, "c").id == b.id


def test_new_conversations_go_to_the_perishable_account_and_the_pin_beats_it():
    pool, clock = make(4, 4, 4)
    observe(pool.accounts[3], clock, "seven_day", 0.1, 2 * H)  # resets soon, nearly unused
    for i in range(3):
        observe(pool.accounts[i + 1], clock, "five_hour", 0.1, 3 * H)
    for acc in (pool.accounts[1], pool.accounts[2]):
        observe(acc, clock, "seven_day", 0.1, 6 * 86400)
    assert [turn(pool, clock, f"n{i}").id for i in range(3)] == [3, 3, 3]
    pool.switch("acc1")
    assert turn(pool, clock, "n9").id == 1
    assert turn(pool, clock, "n0").id == 1  # the switch freed acc3's conversations to the pin
    clock.advance(301)
    pool.evaluate()
    assert turn(pool, clock, "n10").id == 3


def test_fable_gates_hold_for_moves():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "f", route=FABLE)
    b = pool.accounts[2] if a.id == 1 else pool.accounts[1]
    observe(a, clock, "fable", 0.99, 20 * H)  # a is over its Fable ceiling
    observe(b, clock, "fable", 0.985, 20 * H)  # b too: no place to go
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=FABLE, conversation="f"))
    assert err.value.code == "quota_exhausted"
    observe(b, clock, "fable", 0.5, 20 * H)
    assert turn(pool, clock, "f", route=FABLE).id == b.id


def test_new_conversations_fill_the_perishable_account_only_up_to_its_slots():
    """A swarm of new conversations: the perishable account takes one per slot, then the rest
    go elsewhere (a bound conversation could not spill when they all want a slot at once)."""
    pool, clock = make(2, 2)
    observe(pool.accounts[2], clock, "seven_day", 0.1, 2 * H)  # resets soon, nearly unused
    observe(pool.accounts[1], clock, "seven_day", 0.1, 6 * 86400)
    assert [turn(pool, clock, f"s{i}").id for i in range(4)] == [2, 2, 1, 1]
    clock.advance(CACHE_TTL)  # the swarm is over: its conversations no longer count
    assert turn(pool, clock, "later").id == 2


def test_a_prefix_is_warm_only_where_the_last_turn_left_it_and_only_within_the_ttl():
    now = 10_000.0

    def last(account_id: int = 1, ago: float = 0.0, warm: int = 1) -> PreviousTurn:
        return PreviousTurn(account_id, now - ago, 5_000, warm)

    assert warm_chance(None, 1, now) == 1.0  # nothing known: assume warm, moving is the risk
    assert warm_chance(last(), 1, now) == 1.0  # even one warm token counts
    assert warm_chance(last(ago=CACHE_TTL), 1, now) == 1.0  # the last second of the TTL
    assert warm_chance(last(ago=CACHE_TTL + 1), 1, now) == 0.0
    assert warm_chance(last(account_id=2), 1, now) == 0.0
    assert warm_chance(last(warm=0), 1, now) == 0.0


def other_than(pool: Pool, account: AccountState) -> AccountState:
    return next(a for a in pool.accounts.values() if a is not account)


def test_a_cold_conversation_leaves_from_near_its_ceiling_a_warm_one_stays_until_over_it():
    """NEAR_LIMIT: at 0.80 of a 0.90 ceiling a cold conversation goes (nothing to lose), a warm
    one keeps its cache; both accounts read the same, so no score gain explains a move."""
    pool, clock = make(4, 4)
    a = turn(pool, clock, "warm")
    b = other_than(pool, a)
    pool.bindings[(1, "cold")] = a.id
    for account in (a, b):
        observe(account, clock, "five_hour", 0.80, 3 * H)
    remember(pool, "warm", a.id, clock.now() - 10, 60_000)
    remember(pool, "cold", a.id, clock.now() - CACHE_TTL - 5, 60_000)
    assert turn(pool, clock, "warm").id == a.id
    assert turn(pool, clock, "cold").id == b.id


def test_a_cold_conversation_with_room_moves_only_for_a_gain_beyond_the_margin():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "c")
    b = other_than(pool, a)
    for account in (a, b):
        observe(account, clock, "five_hour", 0.5, 3 * H)
    remember(pool, "c", a.id, clock.now() - CACHE_TTL - 1, 60_000)
    assert turn(pool, clock, "c").id == a.id  # equal scores: a move would gain nothing
    observe(b, clock, "five_hour", 0.2, 3 * H)  # b now scores 0.7 to a's 0.4: 1.75x > 1.25x
    remember(pool, "c", a.id, clock.now() - CACHE_TTL - 1, 60_000)
    assert turn(pool, clock, "c").id == b.id


def test_a_stranded_conversation_moves_to_the_lowest_numbered_of_equal_accounts():
    pool, clock = make(4, 4, 4)
    pool.bindings[(1, "c")] = 3
    observe(pool.accounts[3], clock, "five_hour", 1.0, 3 * H)
    assert turn(pool, clock, "c").id == 1


def test_a_stranded_conversation_with_nowhere_admissible_hears_its_own_accounts_gate():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "c")
    b = other_than(pool, a)
    observe(a, clock, "five_hour", 1.0, 3 * H)  # a: quota gone
    b.cooldown_until = clock.now() + 60  # b: cooling, not admissible either
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert err.value.code == "quota_exhausted" and f"acc{a.id}" in err.value.message


def test_a_cold_conversation_on_a_recovering_account_goes_as_its_probe():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "c")
    failing = pool.acquire(Demand(group_id=1, route=MAIN))
    while failing.account is not a:
        failing.release(Outcome.SUCCESS)
        failing = pool.acquire(Demand(group_id=1, route=MAIN))
    failing.release(Outcome.FAILURE)
    clock.advance(CACHE_TTL + 1)  # the cooldown is over and the cache cold
    assert a.recovering(clock.now())
    lease = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert lease.account is a and lease.probe


def test_a_conversation_placed_past_a_full_pinned_account_joins_the_pin_and_stays_there():
    pool, clock = make(1, 4)
    pool.switch("acc1")
    held = pool.acquire(Demand(group_id=1, route=MAIN, conversation="first"))
    assert held.account.id == 1  # the pin takes new conversations while it has a slot
    assert turn(pool, clock, "c").id == 2  # the pin is full: placed elsewhere
    held.release(Outcome.SUCCESS)
    assert turn(pool, clock, "c").id == 1  # the slot is free: the pin draws it over
    observe(pool.accounts[1], clock, "five_hour", 0.85, 3 * H)  # acc2 is far better now
    assert turn(pool, clock, "c").id == 1  # the pin holds its conversations


def test_new_conversations_take_a_free_slot_before_a_better_score():
    pool, clock = make(1, 1)
    observe(pool.accounts[2], clock, "seven_day", 0.1, 2 * H)  # resets soon, nearly unused
    observe(pool.accounts[1], clock, "seven_day", 0.1, 6 * 86400)
    assert [turn(pool, clock, f"s{i}").id for i in range(2)] == [2, 1]


def test_new_conversations_all_go_to_an_account_scoring_beyond_the_margin():
    pool, clock = make(4, 4)
    observe(pool.accounts[1], clock, "five_hour", 0.5, 3 * H)
    observe(pool.accounts[2], clock, "five_hour", 0.2, 3 * H)  # 1.75x: beyond 1.25x
    assert [turn(pool, clock, f"s{i}").id for i in range(4)] == [2, 2, 2, 2]


def test_new_conversations_among_equals_fill_accounts_in_proportion_to_their_slots():
    pool, clock = make(4, 2)
    placed = [turn(pool, clock, f"s{i}").id for i in range(6)]
    assert placed.count(1) == 4 and placed.count(2) == 2


def test_a_new_conversation_goes_where_the_smallest_share_of_slots_is_taken():
    pool, clock = make(4, 2)
    remember(pool, "x", 1, clock.now(), 60_000)  # one of acc1's four slots: a quarter
    remember(pool, "y", 2, clock.now(), 60_000)  # one of acc2's two: a half
    assert turn(pool, clock, "new").id == 1
    pool, clock = make(4, 1)
    remember(pool, "x", 1, clock.now(), 60_000)  # a quarter of acc1; acc2 runs nothing
    assert turn(pool, clock, "new").id == 2


def test_a_cold_conversation_stays_when_the_gain_only_equals_the_margin():
    pool, clock = make(4, 4)
    a = turn(pool, clock, "c")
    b = other_than(pool, a)
    observe(a, clock, "five_hour", 0.5, 3 * H)
    observe(b, clock, "five_hour", 0.4, 3 * H)
    demand = Demand(group_id=1, route=MAIN)
    gain = pool.scheduler.score(b, demand, clock.now()) / pool.scheduler.score(
        a, demand, clock.now()
    )
    assert gain == 1.25  # exactly the margin: it must be beaten, not met
    remember(pool, "c", a.id, clock.now() - CACHE_TTL - 1, 60_000)
    assert turn(pool, clock, "c").id == a.id
