"""What a client is told when the pool says no (R-LANE-1, R-POOL-4, R-PX-8): the stable code,
the sentence, and the bounded Retry-After (every 429 and 503 carries one, at least 1 s), gate by
gate, on a fake clock."""

from __future__ import annotations

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model

MAIN = route_model("claude-sonnet-4-5")
FABLE = route_model("claude-fable-5")
H = 3600.0


def make(n: int = 1, limit: int = 2) -> tuple[Pool, FakeClock]:
    clock = FakeClock()
    pool = Pool(clock)
    pool.sync_accounts(
        AccountState(id=i + 1, name=f"acc{i + 1}", provider="anthropic", max_concurrency=limit)
        for i in range(n)
    )
    return pool, clock


def refusal(pool: Pool, route=MAIN, conversation: str | None = None) -> tuple:
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=route, conversation=conversation))
    e = err.value
    return e.code, e.message, e.retry_after


def seen(pool, clock, window, util, resets_in=None, ago=0.0, rejected=False, account=1):
    resets = clock.now() + resets_in if resets_in is not None else None
    pool.accounts[account].gauges.apply(
        Observation(window, util, resets, clock.now() - ago, "headers", rejected)
    )


def test_disabled_signed_out_and_paused_accounts_say_which_and_why():
    pool, _ = make()
    pool.accounts[1].enabled = False
    assert refusal(pool) == (
        "no_account",
        "no usable anthropic account: account acc1 is disabled",
        1,
    )
    pool.accounts[1].enabled = True
    pool.accounts[1].auth_failed = True
    assert refusal(pool) == (
        "no_account",
        "no usable anthropic account: account acc1 needs to be signed in again",
        1,
    )
    pool.accounts[1].auth_failed = False
    pool.set_paused(1, True)
    assert refusal(pool) == ("no_account", "no usable anthropic account: account acc1 is paused", 1)


def test_a_bound_conversation_hears_its_own_accounts_gate():
    pool, clock = make()
    pool.acquire(Demand(group_id=1, route=MAIN, conversation="c")).release(Outcome.SUCCESS)
    pool.accounts[1].auth_failed = True
    assert refusal(pool, conversation="c") == (
        "auth_failed",
        "account acc1 needs to be signed in again",
        1,
    )
    pool.accounts[1].auth_failed = False
    pool.acquire(Demand(group_id=1, route=MAIN, conversation="c")).release(Outcome.FAILURE)
    clock.advance(4.5)
    assert refusal(pool, conversation="c") == (
        "account_cooling",
        "account acc1 is cooling down after upstream failures",
        11,
    )


def test_exhausted_quota_is_rechecked_when_the_reading_goes_stale_or_the_window_resets():
    pool, clock = make()
    seen(pool, clock, "five_hour", 1.0, resets_in=3 * H, ago=30)
    assert refusal(pool) == ("quota_exhausted", "account acc1 has no quota left", 90)
    seen(pool, clock, "seven_day", 1.0, resets_in=40)  # resets before it would go stale
    assert refusal(pool)[2] == 40  # the sooner of the two windows' deadlines
    pool2, clock2 = make()
    seen(pool2, clock2, "seven_day", 1.2, resets_in=None)
    assert refusal(pool2) == ("quota_exhausted", "account acc1 has no quota left", 120)


def test_fable_gates_name_the_fable_bucket():
    pool, clock = make()
    pool.acquire(Demand(group_id=1, route=FABLE)).release(Outcome.FABLE_FAILURE, status=429)
    clock.advance(5)
    assert refusal(pool, FABLE) == (
        "account_cooling",
        "account acc1 is resting its Fable bucket after a 429",
        10,
    )
    clock.advance(10)
    seen(pool, clock, "fable", 0.4, resets_in=20 * H, rejected=True)
    assert refusal(pool, FABLE) == ("quota_exhausted", "account acc1 has no Fable quota left", 120)
    seen(pool, clock, "fable", 0.985, resets_in=20 * H, ago=0)
    clock.advance(1)
    assert refusal(pool, FABLE) == (
        "quota_exhausted",
        "account acc1 is at its Fable ceiling (98%)",
        119,
    )
    clock.advance(150)  # stale now: the ceiling still holds, rechecked at the reset
    seen(pool, clock, "fable", 0.985, resets_in=200, ago=130)
    assert refusal(pool, FABLE)[2] == 200


def test_fable_ceiling_at_its_exact_value_is_a_gate_and_overrides_apply():
    pool, clock = make(2)
    seen(pool, clock, "fable", 0.98, resets_in=H)
    seen(pool, clock, "fable", 0.5, resets_in=H, account=2)
    lease = pool.acquire(Demand(group_id=1, route=FABLE))
    assert lease.account.name == "acc2"  # 98 % is at the Fable ceiling: gated
    lease.release(Outcome.SUCCESS)
    pool.accounts[1].ceilings = {"fable_weekly_max": 0.99}
    pool.accounts[2].ceilings = {"fable_weekly_max": 0.4}
    lease = pool.acquire(Demand(group_id=1, route=FABLE))
    assert lease.account.name == "acc1"


def test_busy_beats_waiting_beats_gone():
    pool, clock = make(3, limit=1)
    pool.set_paused(3, True)
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE)  # acc1 cools 15 s
    clock.advance(1)
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert held.account.name == "acc2"
    assert refusal(pool) == (
        "account_busy",
        "every eligible account is serving its limit; retry shortly",
        2,
    )
    held.release(Outcome.FAILURE)  # acc2 cools 15 s too, from now
    assert refusal(pool) == (
        "account_cooling",
        "account acc1 is cooling down after upstream failures",
        14,
    )


def test_nothing_in_the_group_serves_the_model():
    pool, _ = make()
    assert refusal(pool, route_model("gpt-5")) == (
        "no_account",
        "no codex account in your group serves gpt-5",
        1,
    )
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=route_model("gpt-5"), conversation="c"))
    assert err.value.message == "no codex account in your group serves gpt-5"


def test_a_bound_conversation_at_its_accounts_limit_stays_and_is_told_so():
    pool, _ = make(2, limit=1)
    first = pool.acquire(Demand(group_id=1, route=MAIN, conversation="c"))
    assert refusal(pool, conversation="c") == (
        "account_busy",
        "account acc1 is serving its limit of 1; this conversation stays on it",
        2,
    )
    first.release(Outcome.SUCCESS)


def test_a_reading_about_to_go_stale_asks_for_a_recheck_in_1_second():
    pool, clock = make()
    seen(pool, clock, "five_hour", 1.0, resets_in=3 * H, ago=119.5)
    assert refusal(pool) == ("quota_exhausted", "account acc1 has no quota left", 1)


def test_a_stale_fable_ceiling_without_a_known_reset_is_rechecked_in_a_minute():
    pool, clock = make()
    seen(pool, clock, "fable", 0.99, resets_in=None, ago=500)
    assert refusal(pool, FABLE) == (
        "quota_exhausted",
        "account acc1 is at its Fable ceiling (98%)",
        60,
    )


def antigravity_pool() -> tuple[Pool, FakeClock]:
    clock = FakeClock()
    pool = Pool(clock)
    pool.sync_accounts([AccountState(id=1, name="ag", provider="antigravity")])
    return pool, clock


def test_antigravity_quota_is_per_model_family():
    pool, clock = antigravity_pool()
    gemini_pro, gemini_flash = route_model("gemini-2.5-pro"), route_model("gemini-2.5-flash")
    seen(pool, clock, "gemini_pro", 1.0, resets_in=H, ago=30)
    assert refusal(pool, gemini_pro) == (
        "quota_exhausted",
        "account ag has no gemini pro quota left",
        90,
    )
    pool.acquire(Demand(group_id=1, route=gemini_flash)).release(Outcome.SUCCESS)
    assert pool.state_of(pool.accounts[1]) == "ok"


def test_an_antigravity_account_with_every_family_spent_is_exhausted():
    pool, clock = antigravity_pool()
    for family, ago in (("claude", 10), ("gemini_pro", 50), ("gemini_flash", 20)):
        seen(pool, clock, family, 1.0, resets_in=H, ago=ago)
    assert refusal(pool, route_model("gemini-2.5-flash")) == (
        "quota_exhausted",
        "account ag has no quota left",
        70,
    )  # the soonest recheck
    assert pool.state_of(pool.accounts[1]) == "quota_exhausted"


def test_the_soonest_wait_is_reported_whichever_account_it_is():
    pool, _clock = make(2, limit=1)
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE, retry_after=100)
    pool.acquire(Demand(group_id=1, route=MAIN)).release(Outcome.FAILURE, retry_after=30)
    assert refusal(pool) == (
        "account_cooling",
        "account acc2 is cooling down after upstream failures",
        30,
    )


def test_every_reason_is_listed_when_no_account_is_usable():
    pool, _ = make(2)
    pool.accounts[1].enabled = False
    pool.set_paused(2, True)
    assert refusal(pool)[:2] == (
        "no_account",
        "no usable anthropic account: account acc1 is disabled; account acc2 is paused",
    )


def test_an_unknown_account_is_named_in_the_error():
    pool, _ = make()
    with pytest.raises(KeyError) as err:
        pool.find("nope")
    assert err.value.args == ("unknown account 'nope'",)
    assert pool.find("1").name == "acc1" and pool.find(1).name == "acc1"


def test_a_bound_conversation_on_a_disabled_or_paused_account_hears_no_account():
    pool, _ = make()
    pool.acquire(Demand(group_id=1, route=MAIN, conversation="c")).release(Outcome.SUCCESS)
    pool.accounts[1].enabled = False  # as the catalog says after a disable elsewhere
    assert refusal(pool, conversation="c") == ("no_account", "account acc1 is disabled", 1)
    pool.accounts[1].enabled = True
    pool.accounts[1].paused = True  # as loaded from the database
    assert refusal(pool, conversation="c") == ("no_account", "account acc1 is paused", 1)


def test_the_instance_cap_says_how_many_slots_and_to_retry_in_2_seconds():
    clock = FakeClock()
    pool = Pool(clock, cap=1)
    pool.sync_accounts([AccountState(id=1, name="acc1", provider="anthropic")])
    held = pool.acquire(Demand(group_id=1, route=MAIN))
    assert refusal(pool) == (
        "capacity_exhausted",
        "all 1 upstream slots are in use; retry shortly",
        2,
    )
    held.release(Outcome.SUCCESS)


def test_the_only_account_exactly_at_its_fable_ceiling_is_refused_fable_work():
    pool, clock = make()
    seen(pool, clock, "fable", 0.98, resets_in=H)
    assert refusal(pool, FABLE)[0] == "quota_exhausted"


def test_a_pin_ends_at_exactly_five_minutes_even_before_the_tick():
    pool, clock = make(2)
    seen(pool, clock, "fable", 0.99, resets_in=20 * H, account=2)
    pool.switch("acc2")
    clock.advance(299)
    lease = pool.acquire(Demand(group_id=1, route=FABLE))
    assert lease.account.name == "acc2"
    lease.release(Outcome.SUCCESS)
    clock.advance(1)
    seen(pool, clock, "fable", 0.99, resets_in=20 * H, account=2)
    lease = pool.acquire(Demand(group_id=1, route=FABLE))
    assert lease.account.name == "acc1"


def test_deleting_an_account_frees_only_its_conversations():
    pool, _ = make(2)
    for name in ("x", "y"):
        pool.acquire(Demand(group_id=1, route=MAIN, conversation=name)).release(Outcome.SUCCESS)
    assert pool.bindings == {(1, "x"): 1, (1, "y"): 2}
    pool.sync_accounts([pool.accounts[2]])
    assert pool.bindings == {(1, "y"): 2}


def test_a_spent_family_rests_until_the_reset_google_named_and_serves_from_that_instant():
    """R-WF-5: the rest holds whatever the gauge reads, for that family only, and ends at the
    named reset itself (not a tick later)."""
    pool, clock = antigravity_pool()
    account = pool.accounts[1]
    pool.rest_family(account, "gemini_pro", clock.now() + H)
    account.gauges.clear()  # the rest itself refuses, not a spent reading
    assert refusal(pool, route_model("gemini-2.5-pro")) == (
        "quota_exhausted",
        "account ag has no gemini pro quota left until its reset",
        300,  # the longest Retry-After a client is told; the hold itself lasts the hour
    )
    pool.acquire(Demand(group_id=1, route=route_model("gemini-2.5-flash"))).release(Outcome.SUCCESS)
    clock.advance(H)
    pool.acquire(Demand(group_id=1, route=route_model("gemini-2.5-pro"))).release(Outcome.SUCCESS)
