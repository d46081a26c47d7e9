"""R-OBS-3: cooldowns end on evidence, never outlive it. A 429 that named a window holds the
account (or its Fable bucket, or a model family) until that window's reset, a usage read that
shows the window below its ceiling, or a response saying it is allowed; a 429 that named none
is pacing on the ladder and is never worded as a spent quota. Fake clock, no network, no DB."""

from __future__ import annotations

import time

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.cooldown import QuotaHit, clock_minutes, cooldown_seconds
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model
from tests.core.test_pool import Recorder, make_pool

CLAUDE = route_model("claude-sonnet-4-5")
FABLE = route_model("claude-fable-5")
H = 3600.0


def ask(route=CLAUDE) -> Demand:
    return Demand(group_id=1, route=route)


def reading(clock, window, utilization, source="headers", rejected=False, ago=0.0):
    return Observation(window, utilization, None, clock.now() - ago, source, rejected)


def quota_429(pool, window, resets_in, route=CLAUDE, outcome=Outcome.FAILURE):
    lease = pool.acquire(ask(route))
    hit = QuotaHit(window, pool.clock.now() + resets_in)
    lease.release(outcome, None, status=429, quota=hit)
    return lease.account


def test_a_429_that_names_a_window_holds_until_that_window_resets_not_the_ladder():
    pool, clock, rec = make_pool(2)
    account = quota_429(pool, "five_hour", 2 * H)
    assert account.cooldown_until == clock.now() + 2 * H  # not 15 s, not the 15-minute cap
    (hold,) = pool.holds_of(account)
    assert hold["kind"] == "quota" and hold["window"] == "five_hour"
    assert hold["until"] == hold["resets_at"] == clock.now() + 2 * H
    assert (
        hold["words"]
        == f"Limit reached (5h), resets {clock_minutes(clock.now() + 2 * H, clock.now())}"
    )
    with pytest.raises(GatewayError) as err:
        pool.acquire(ask())
    assert "reached its 5h limit" in err.value.message
    # (a) the reset passes: the hold is over (one probe, as after any cooldown)
    clock.advance(2 * H - 1)
    assert pool.state_of(account) == "cooling"
    clock.advance(1)
    assert pool.state_of(account) == "probing" and pool.holds_of(account) == []
    assert rec.runtime[-1][1]["holds"]["evidence"]["account"]["window"] == "five_hour"


def test_a_429_that_names_no_window_is_pacing_on_the_ladder_and_never_quota_words():
    pool, clock, _ = make_pool(2)
    lease = pool.acquire(ask())
    lease.release(Outcome.FAILURE, None, status=429)
    account = lease.account
    assert account.cooldown_until == clock.now() + cooldown_seconds(1)
    (hold,) = pool.holds_of(account)
    assert hold["kind"] == "pacing" and hold["window"] is None
    assert hold["cause"] == "upstream 429 (pacing)"
    assert hold["words"] == (
        f"Cooling until {clock_minutes(account.cooldown_until, clock.now())} — upstream 429 (pacing)"
    )
    assert "quota" not in hold["words"].lower() and "limit" not in hold["words"].lower()
    assert pool.state_of(account) == "cooling"
    # an open window says nothing about pacing: the ladder runs its course
    pool.note_readings(account, [reading(clock, "five_hour", 0.1, source="poll")])
    assert pool.state_of(account) == "cooling"


def test_a_5xx_cools_on_the_ladder_as_an_upstream_error():
    pool, _clock, _ = make_pool(2)
    lease = pool.acquire(ask())
    lease.release(Outcome.FAILURE, None, status=503)
    (hold,) = pool.holds_of(lease.account)
    assert hold["kind"] == "error" and hold["words"].endswith("— upstream error")


def test_b_a_usage_read_below_the_ceiling_ends_a_quota_hold():
    pool, clock, rec = make_pool(2)
    account = quota_429(pool, "five_hour", 3 * H)
    clock.advance(60)
    # a read begun before the 429 says nothing about it
    pool.note_readings(account, [reading(clock, "five_hour", 0.2, source="poll", ago=120)])
    assert pool.state_of(account) == "cooling"
    # a read of another window says nothing about this one
    pool.note_readings(account, [reading(clock, "seven_day", 0.2, source="poll")])
    assert pool.state_of(account) == "cooling"
    # above the 5h ceiling (0.90) is not headroom yet
    pool.note_readings(account, [reading(clock, "five_hour", 0.95, source="poll")])
    assert pool.state_of(account) == "cooling"
    pool.note_readings(account, [reading(clock, "five_hour", 0.4, source="poll")])
    assert pool.state_of(account) == "ok" and pool.holds_of(account) == []
    assert pool.acquire(ask()).account is account  # no probe needed: the window is open
    assert rec.runtime[-1][1]["cooldown_until"] is None


def test_c_a_response_saying_allowed_ends_a_quota_hold_and_rejected_keeps_it():
    pool, clock, _ = make_pool(2)
    account = quota_429(pool, "seven_day", 50 * H)
    clock.advance(5)
    pool.note_readings(account, [reading(clock, "seven_day", 1.0)])  # still at 100%
    pool.note_readings(account, [reading(clock, "seven_day", 0.7, rejected=True)])
    assert pool.state_of(account) == "cooling"
    pool.note_readings(account, [reading(clock, "seven_day", 0.97)])  # allowed, over ceiling
    assert pool.state_of(account) == "ok"


def test_a_fable_quota_429_rests_the_bucket_until_its_reset_and_allowed_ends_it():
    pool, clock, _ = make_pool(2)
    account = quota_429(pool, "fable", 30 * H, route=FABLE, outcome=Outcome.FABLE_FAILURE)
    assert account.fable_cooldown_until == clock.now() + 30 * H
    assert pool.state_of(account) == "ok"  # other models keep flowing
    (hold,) = pool.holds_of(account)
    assert (hold["scope"], hold["kind"], hold["window"]) == ("fable", "quota", "fable")
    assert hold["words"].startswith("Limit reached (Fable), resets ")
    assert hold["words"] == "Limit reached (Fable), resets " + time.strftime(
        "%a %H:%M", time.localtime(clock.now() + 30 * H)
    )  # more than a day ahead: the weekday too
    with pytest.raises(GatewayError):
        pool.acquire(ask(FABLE))
    clock.advance(10)
    pool.note_readings(account, [reading(clock, "fable", 0.5)])  # a main response's headers
    assert pool.holds_of(account) == []
    assert pool.acquire(ask(FABLE)).account is account


def test_a_fable_429_without_a_named_window_is_fable_pacing():
    pool, clock, _ = make_pool(2)
    lease = pool.acquire(ask(FABLE))
    lease.release(Outcome.FABLE_FAILURE, None, status=429)
    (hold,) = pool.holds_of(lease.account)
    assert (hold["scope"], hold["kind"]) == ("fable", "pacing")
    assert hold["words"].startswith("Fable cooling until ")
    assert lease.account.fable_cooldown_until == clock.now() + cooldown_seconds(1)


def test_a_fable_window_on_an_account_wide_429_paces_the_account_and_holds_the_bucket():
    """R-LANE-7: retry-after parks the account; the bucket it named waits for its reset."""
    pool, clock, _ = make_pool(2)
    lease = pool.acquire(ask(FABLE))
    lease.release(Outcome.FAILURE, 40.0, status=429, quota=QuotaHit("fable", clock.now() + H))
    account = lease.account
    assert account.cooldown_until == clock.now() + 40
    assert account.fable_cooldown_until == clock.now() + H
    assert [(h["scope"], h["kind"]) for h in pool.holds_of(account)] == [
        ("account", "pacing"),
        ("fable", "quota"),
    ]


def test_a_spent_model_family_ends_on_a_read_below_its_ceiling():
    clock = FakeClock()
    pool = Pool(clock, persistence=Recorder())
    pool.sync_accounts([AccountState(id=1, name="g", provider="antigravity")])
    account = pool.accounts[1]
    pool.rest_family(account, "gemini_pro", clock.now() + 4 * H)
    (hold,) = pool.holds_of(account)
    assert (hold["scope"], hold["kind"], hold["window"]) == ("gemini_pro", "quota", "gemini_pro")
    assert (
        hold["words"]
        == f"Limit reached (Gemini Pro), resets {clock_minutes(clock.now() + 4 * H, clock.now())}"
    )
    clock.advance(1)
    pool.note_readings(account, [reading(clock, "gemini_pro", 0.3, source="poll")])
    assert account.family_cooldowns == {} and pool.holds_of(account) == []


def test_a_hold_without_a_known_reset_falls_back_to_the_ladder_but_stays_quota():
    pool, clock, _ = make_pool(2)
    lease = pool.acquire(ask())
    lease.release(Outcome.FAILURE, None, status=429, quota=QuotaHit("five_hour", None))
    (hold,) = pool.holds_of(lease.account)
    assert hold["kind"] == "quota" and hold["until"] == clock.now() + cooldown_seconds(1)
    assert hold["words"].startswith("Limit reached (5h), rechecking at ")


def test_a_usage_limit_that_names_no_window_says_so_and_needs_both_windows_open():
    pool, clock, _ = make_pool(2)
    account = quota_429(pool, None, H)
    (hold,) = pool.holds_of(account)
    assert (
        hold["words"]
        == f"Usage limit reached, resets {clock_minutes(clock.now() + H, clock.now())}"
    )
    clock.advance(1)
    pool.note_readings(
        account, [reading(clock, "five_hour", 0.2), reading(clock, "seven_day", 1.0)]
    )
    assert pool.state_of(account) == "cooling"
    pool.note_readings(
        account, [reading(clock, "five_hour", 0.2), reading(clock, "seven_day", 0.5)]
    )
    assert pool.state_of(account) == "ok"


def test_holds_survive_the_stored_form():
    pool, clock, rec = make_pool(2)
    account = quota_429(pool, "seven_day", 20 * H)
    pool.rest_family(account, "claude", clock.now() + H)
    stored = rec.runtime[-1][1]
    again = AccountState(
        id=1, name="acc1", provider="anthropic", cooldown_until=stored["cooldown_until"]
    )
    again.load_holds(stored["holds"])
    assert again.evidence == account.evidence
    assert again.family_cooldowns == account.family_cooldowns
    # a stored form that cannot be read is left out, not trusted
    broken = AccountState(id=1, name="acc1", provider="anthropic")
    broken.load_holds({"evidence": {"account": {"kind": "nonsense", "since": 1}}, "families": 3})
    assert broken.evidence == {} and broken.family_cooldowns == {}
    for unreadable in (
        {"evidence": ["account"], "families": {"claude": "tomorrow", "gemini_pro": None}},
        {"evidence": "quota", "families": ["claude"]},
        ["not", "a", "mapping"],
    ):
        broken.load_holds(unreadable)  # a damaged row must not stop the service from starting
        assert broken.evidence == {} and broken.family_cooldowns == {}


def test_resume_clears_the_account_hold_and_its_evidence():
    pool, _clock, _ = make_pool(2)
    account = quota_429(pool, "five_hour", 2 * H)
    pool.resume("acc1")
    assert pool.holds_of(account) == [] and "account" not in account.evidence
