"""Cross-provider placement (R-AG-3, R-POOL-5): Anthropic first, Antigravity as the overflow."""

from __future__ import annotations

import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import route_model


def make_pool(cap: int = 8) -> Pool:
    pool = Pool(FakeClock(), cap=cap)
    pool.sync_accounts(
        [
            AccountState(id=1, name="work-max", provider="anthropic"),
            AccountState(id=2, name="google", provider="antigravity"),
        ]
    )
    return pool


def ask(pool: Pool, model: str, conversation: str | None = None) -> str:
    route = route_model(model)
    assert route is not None
    lease = pool.acquire(Demand(group_id=1, route=route, conversation=conversation))
    lease.release(Outcome.SUCCESS)
    return lease.account.name


def test_claude_prefers_anthropic_spills_when_it_is_paused_and_returns_when_it_is_back():
    pool = make_pool()
    assert ask(pool, "claude-sonnet-4-5") == "work-max"
    pool.set_paused(1, True)
    assert ask(pool, "claude-sonnet-4-5") == "google"
    assert ask(pool, "claude-sonnet-4-5", "new-conv") == "google"
    pool.set_paused(1, False)
    assert ask(pool, "claude-sonnet-4-5") == "work-max"
    assert ask(pool, "claude-sonnet-4-5", "newer-conv") == "work-max"


def test_a_conversation_placed_on_the_overflow_stays_there():
    pool = make_pool()
    pool.set_paused(1, True)
    assert ask(pool, "claude-sonnet-4-5", "c1") == "google"
    pool.set_paused(1, False)
    assert ask(pool, "claude-sonnet-4-5", "c1") == "google"  # its cache lives there now


def test_spilling_leaves_the_anthropic_lane_anchor_alone():
    pool = make_pool()
    ask(pool, "claude-sonnet-4-5")
    pool.accounts[1].cooldown_until = pool.clock.now() + 60
    assert ask(pool, "claude-sonnet-4-5") == "google"
    assert pool.scheduler.current[(1, "anthropic")] == 1
    assert pool.scheduler.current[(1, "antigravity")] == 2


def test_an_explicit_prefix_and_a_fable_model_never_spill():
    pool = make_pool()
    assert ask(pool, "antigravity/claude-sonnet-4-5") == "google"
    pool.set_paused(1, True)
    with pytest.raises(GatewayError) as err:
        ask(pool, "anthropic/claude-sonnet-4-5")
    assert err.value.code == "no_account"
    with pytest.raises(GatewayError):
        ask(pool, "claude-fable-5")


def test_with_only_antigravity_accounts_claude_models_still_work():
    pool = Pool(FakeClock())
    pool.sync_accounts([AccountState(id=2, name="google", provider="antigravity")])
    assert ask(pool, "claude-sonnet-4-5") == "google"


def test_a_full_global_cap_is_not_a_reason_to_spill():
    pool = make_pool(cap=1)
    route = route_model("claude-sonnet-4-5")
    held = pool.acquire(Demand(group_id=1, route=route))
    with pytest.raises(GatewayError) as err:
        pool.acquire(Demand(group_id=1, route=route))
    assert err.value.code == "capacity_exhausted"
    held.release(Outcome.SUCCESS)


def test_when_nothing_can_take_it_the_preferred_providers_reason_is_given():
    pool = make_pool()
    pool.set_paused(1, True)
    pool.set_paused(2, True)
    with pytest.raises(GatewayError) as err:
        ask(pool, "claude-sonnet-4-5")
    assert "work-max" in str(err.value)


def test_a_recovering_antigravity_account_takes_the_spill_as_its_probe():
    pool = make_pool()
    pool.set_paused(1, True)
    google = pool.accounts[2]
    google.failure_streak, google.cooldown_until = 1, pool.clock.now() - 1  # cooled, now over
    route = route_model("claude-sonnet-4-5")
    lease = pool.acquire(Demand(group_id=1, route=route))
    assert lease.account is google and lease.probe
    with pytest.raises(GatewayError):  # one probe at a time, spilled or not
        pool.acquire(Demand(group_id=1, route=route))
    lease.release(Outcome.SUCCESS)
    assert google.failure_streak == 0
