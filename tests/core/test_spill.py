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
    pool.accounts[1].cooldown_until = pool.clock.now() + 60
    assert ask(pool, "claude-sonnet-4-5", "c1") == "google"
    pool.clock.advance(61)  # the cooldown ran out: no one did anything
    assert ask(pool, "claude-sonnet-4-5", "c1") == "google"  # its cache lives there now


# --- R-WF-6: a spill goes only where the model is served ------------------------------------


def served_pool(*served: str) -> Pool:
    pool = make_pool()
    pool.serves = lambda account, model: account.provider != "antigravity" or model in served
    return pool


def acquire(pool: Pool, model: str, conversation: str | None = None):
    route = route_model(model)
    assert route is not None
    return pool.acquire(Demand(group_id=1, route=route, conversation=conversation))


def test_a_model_the_overflow_does_not_serve_never_spills():
    pool = served_pool("claude-sonnet-4-6")
    pool.set_limit(1, 1)
    held = acquire(pool, "claude-sonnet-4-6", "first")  # Anthropic at its limit of 1
    with pytest.raises(GatewayError) as err:
        acquire(pool, "claude-haiku-4-5", "second")
    assert err.value.code == "account_busy"  # the pool's busy answer, not a spill
    assert (1, "second") not in pool.bindings and not pool.spilled
    spilled = acquire(pool, "claude-sonnet-4-6", "third")  # served there: it spills
    assert spilled.account.name == "google" and pool.spilled == {(1, "third"): "anthropic"}
    spilled.release(Outcome.SUCCESS)
    held.release(Outcome.SUCCESS)
    assert ask(pool, "claude-haiku-4-5", "second") == "work-max"


def test_a_failed_spill_binds_nothing():
    pool = served_pool("claude-sonnet-4-6")
    pool.set_paused(1, True)
    for outcome in (Outcome.FAILURE, Outcome.NEUTRAL, Outcome.AUTH_FAILURE):
        lease = acquire(pool, "claude-sonnet-4-6", "c1")
        assert lease.account.name == "google" and pool.bindings[(1, "c1")] == 2
        lease.release(outcome)
        assert (1, "c1") not in pool.bindings and not pool.spilled
        pool.accounts[2].auth_failed, pool.accounts[2].cooldown_until = False, None
        pool.accounts[2].failure_streak = 0
    lease = acquire(pool, "claude-sonnet-4-6", "c1")
    lease.release(Outcome.SUCCESS)
    assert pool.bindings[(1, "c1")] == 2  # a spill that worked keeps its conversation


def test_a_spilled_conversation_goes_home_for_a_model_the_overflow_does_not_serve():
    pool = served_pool("claude-sonnet-4-6")
    pool.accounts[1].cooldown_until = pool.clock.now() + 60
    assert ask(pool, "claude-sonnet-4-6", "c1") == "google"
    pool.clock.advance(61)
    assert ask(pool, "claude-haiku-4-5", "c1") == "work-max"
    assert pool.bindings[(1, "c1")] == 1 and not pool.spilled
    assert ask(pool, "claude-sonnet-4-6", "c1") == "work-max"  # home now, and it stays


@pytest.mark.parametrize(
    "lever",
    [
        lambda pool, ref: pool.switch(ref),
        lambda pool, ref: pool.set_paused(ref, True),
        lambda pool, ref: pool.set_enabled(ref, False),
        lambda pool, ref: pool.resume(ref),
        lambda pool, ref: pool.set_limit(ref, 3),
    ],
    ids=["switch", "pause", "disable", "clear-cooldown", "limit"],
)
@pytest.mark.parametrize("ref", [1, 2], ids=["home-account", "spill-account"])
def test_an_operator_action_on_either_account_sends_a_spilled_conversation_home(lever, ref):
    pool = served_pool("claude-sonnet-4-6")
    pool.accounts[1].cooldown_until = pool.clock.now() + 60
    assert ask(pool, "claude-sonnet-4-6", "c1") == "google"
    pool.clock.advance(61)
    lever(pool, ref)
    assert (1, "c1") not in pool.bindings and not pool.spilled
    if pool.accounts[1].enabled and not pool.accounts[1].paused:
        assert ask(pool, "claude-sonnet-4-6", "c1") == "work-max"


def test_an_operator_action_elsewhere_leaves_a_spilled_conversation_alone():
    pool = served_pool("claude-sonnet-4-6")
    pool.sync_accounts([*pool.accounts.values(), AccountState(id=3, name="gpt", provider="codex")])
    pool.accounts[1].cooldown_until = pool.clock.now() + 60
    assert ask(pool, "claude-sonnet-4-6", "c1") == "google"
    pool.set_paused(3, True)
    assert pool.bindings[(1, "c1")] == 2


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
