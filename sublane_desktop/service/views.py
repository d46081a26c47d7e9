"""What the tray, the API and the CLI show of an account and of the pool (SPEC §3)."""

from __future__ import annotations

from typing import Any

from sublane_desktop.accounts.problems import CredentialProblems
from sublane_desktop.core.clock import Clock
from sublane_desktop.core.forecast import UsageTrail, forecast
from sublane_desktop.core.gauges import FRESH_SECONDS, Gauge, windows_for
from sublane_desktop.core.pool import AccountState, Pool
from sublane_desktop.core.quota import POLL_FLOOR_SECONDS

# A reading is shown as stale once it is older than the poll cadence in force plus this: a poll
# is taken when traffic comes after the floor, and takes a moment (R-UI-14).
SHOWN_STALE_GRACE_S = 60.0


def shown_stale(gauge: Gauge, now: float, cadence: float) -> bool:
    """Whether a person should read this gauge as out of date (R-UI-14): judged against how
    often readings come (the poll floor), not against the 2 minutes for which the scheduler
    trusts a reading to exclude an account, so a healthy account never looks stale between
    polls. Cold, or past its reset (the number no longer holds), is stale."""
    if gauge.observed_at is None or gauge.past_reset(now):
        return True
    return now - gauge.observed_at > max(FRESH_SECONDS, cadence + SHOWN_STALE_GRACE_S)


def account_view(
    pool: Pool,
    clock: Clock,
    trail: UsageTrail,
    problems: CredentialProblems,
    account_id: int,
    cadence: float = POLL_FLOOR_SECONDS,
) -> dict[str, Any]:
    account = pool.accounts[account_id]
    now = clock.now()
    gauges = account.gauges
    state = pool.state_of(account)
    holds = pool.holds_of(account)
    reason = problems.reason(account.id, account.revision)
    if reason and state != "disabled":
        state = "auth_failed"
    return {
        "id": account.id,
        "name": account.name,
        "provider": account.provider,
        "state": state,
        "auth_reason": reason if state == "auth_failed" else None,
        "in_flight": account.in_flight,
        "max_concurrency": account.max_concurrency,
        "paused": account.paused,
        "pinned_until": account.pinned_until if pool.scheduler.pinned(account, now) else None,
        "cooldown_until": account.cooldown_until if account.cooling(now) else None,
        "failure_streak": account.failure_streak,
        "current": pool.scheduler.is_current(account),
        "fable_current": pool.scheduler.is_fable_current(account),
        "gauges": {
            window: shown | {"stale": shown_stale(gauges.get(window), now, cadence)}
            for window, shown in gauges.to_json(now, windows_for(account.provider)).items()
        },
        # Antigravity families resting after a spent quota, until their reset (R-WF-5)
        "family_cooldowns": {
            f: until for f, until in account.family_cooldowns.items() if until > now
        },
        "kind": account.kind,
        "forecast": forecasts(trail, account, now, cadence),
        # What holds the account and until when, in words (R-OBS-3): `hold` is the first of
        # `holds` (the account-wide one when there is one), None when nothing holds it.
        "hold": holds[0] if holds else None,
        "holds": holds,
    }


def forecasts(
    trail: UsageTrail, account: AccountState, now: float, cadence: float = POLL_FLOOR_SECONDS
) -> dict[str, dict[str, Any]]:
    """R-UI-7: fresh windows that would run out before their reset, at the last hour's pace
    (fresh as a person reads it: a forecast does not vanish between two polls)."""
    out: dict[str, dict[str, Any]] = {}
    for window in windows_for(account.provider):
        gauge = account.gauges.get(window)
        if shown_stale(gauge, now, cadence):
            continue
        found = forecast(trail.points(account.id, window), gauge.resets_at, now)
        if found is not None:
            out[window] = {
                "runs_out_at": found.runs_out_at,
                "resets_at": found.resets_at,
                "rate_per_hour": found.rate_per_hour,
            }
    return out


def pool_view(
    pool: Pool,
    clock: Clock,
    trail: UsageTrail,
    problems: CredentialProblems,
    cadence: float = POLL_FLOOR_SECONDS,
) -> dict[str, Any]:
    return {
        "accounts": [
            account_view(pool, clock, trail, problems, a, cadence) for a in sorted(pool.accounts)
        ],
        "in_flight": pool.in_flight,
        "cap": pool.cap,
    }
