"""What the tray, the API and the CLI show of an account and of the pool (SPEC §3)."""

from __future__ import annotations

from typing import Any

from sublane_desktop.accounts.problems import CredentialProblems
from sublane_desktop.core.clock import Clock
from sublane_desktop.core.forecast import UsageTrail, forecast
from sublane_desktop.core.gauges import windows_for
from sublane_desktop.core.pool import AccountState, Pool


def account_view(
    pool: Pool, clock: Clock, trail: UsageTrail, problems: CredentialProblems, account_id: int
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
        "gauges": gauges.to_json(now, windows_for(account.provider)),
        # Antigravity families resting after a spent quota, until their reset (R-WF-5)
        "family_cooldowns": {
            f: until for f, until in account.family_cooldowns.items() if until > now
        },
        "kind": account.kind,
        "forecast": forecasts(trail, account, now),
        # What holds the account and until when, in words (R-OBS-3): `hold` is the first of
        # `holds` (the account-wide one when there is one), None when nothing holds it.
        "hold": holds[0] if holds else None,
        "holds": holds,
    }


def forecasts(trail: UsageTrail, account: AccountState, now: float) -> dict[str, dict[str, Any]]:
    """R-UI-7: fresh windows that would run out before their reset, at the last hour's pace."""
    out: dict[str, dict[str, Any]] = {}
    for window in windows_for(account.provider):
        gauge = account.gauges.get(window)
        if gauge.stale(now):
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
    pool: Pool, clock: Clock, trail: UsageTrail, problems: CredentialProblems
) -> dict[str, Any]:
    return {
        "accounts": [account_view(pool, clock, trail, problems, a) for a in sorted(pool.accounts)],
        "in_flight": pool.in_flight,
        "cap": pool.cap,
    }
