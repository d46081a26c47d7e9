"""Quota observations: saved before they are published, conditional on the lifecycle revision."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sublane_desktop.core.forecast import adds_to_trail
from sublane_desktop.core.gauges import Observation
from sublane_desktop.store.models import Account, QuotaHistory, QuotaObservation, QuotaPoll

# The chart shows 7 days; a day more lets it start with a full first day.
HISTORY_RETENTION_S = 8 * 86400.0


def save_observations(account_id: int, revision: int, observations: Iterable[Observation]) -> bool:
    """Store the readings only if the account is still at `revision` (R-GAUGE-4).

    Freshest wins here too: an older reading never overwrites a newer stored one. Returns
    False when the revision moved on (a re-auth or disable happened meanwhile).
    """
    current = Account.select(Account.revision).where(Account.id == account_id).scalar()
    if current != revision:
        return False
    for obs in observations:
        existing = QuotaObservation.get_or_none(
            (QuotaObservation.account == account_id) & (QuotaObservation.window == obs.window)
        )
        if (
            existing is not None
            and existing.revision == revision
            and existing.observed_at > obs.observed_at
        ):
            continue
        QuotaObservation.insert(
            account=account_id,
            window=obs.window,
            utilization=obs.utilization,
            resets_at=obs.resets_at,
            observed_at=obs.observed_at,
            source=obs.source,
            rejected=obs.rejected,
            revision=revision,
        ).on_conflict_replace().execute()
        _append_history(account_id, obs)
    return True


def _append_history(account_id: int, obs: Observation) -> None:
    last = (
        QuotaHistory.select(QuotaHistory.utilization, QuotaHistory.observed_at)
        .where((QuotaHistory.account == account_id) & (QuotaHistory.window == obs.window))
        .order_by(QuotaHistory.observed_at.desc())
        .limit(1)
        .first()
    )
    if last is not None:
        if obs.observed_at <= last.observed_at:
            return
        # the rule the in-memory trail keeps too: one row a minute unless utilization moves
        if not adds_to_trail(
            (last.observed_at, last.utilization), obs.observed_at, obs.utilization
        ):
            return
    QuotaHistory.insert(
        account=account_id,
        window=obs.window,
        utilization=obs.utilization,
        observed_at=obs.observed_at,
    ).execute()
    QuotaHistory.delete().where(
        (QuotaHistory.account == account_id)
        & (QuotaHistory.observed_at < obs.observed_at - HISTORY_RETENTION_S)
    ).execute()


def load_history(
    since: float, account_id: int | None = None, *, trail: bool = False
) -> dict[int, dict[str, list[tuple[float, float]]]]:
    """Readings since `since`, per account and window, oldest first. `trail`: only those a
    forecast may use, i.e. none from before the last reset-usage."""
    query: Any = QuotaHistory.select(
        QuotaHistory.account,
        QuotaHistory.window,
        QuotaHistory.observed_at,
        QuotaHistory.utilization,
    ).where(QuotaHistory.observed_at >= since)
    if account_id is not None:
        query = query.where(QuotaHistory.account == account_id)
    if trail:
        query = query.where(QuotaHistory.voided == False)
    found: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for aid, window, at, util in query.order_by(QuotaHistory.observed_at).tuples():
        found.setdefault(aid, {}).setdefault(window, []).append((at, util))
    return found


def load_observations() -> dict[int, list[Observation]]:
    """Stored readings whose revision still matches their account's (older ones are void)."""
    revisions = {a.id: a.revision for a in Account.select(Account.id, Account.revision)}
    found: dict[int, list[Observation]] = {}
    for row in QuotaObservation.select():
        if revisions.get(row.account_id) != row.revision:
            continue
        found.setdefault(row.account_id, []).append(
            Observation(
                row.window,
                row.utilization,
                row.resets_at,
                row.observed_at,
                row.source,
                bool(row.rejected),
            )
        )
    return found


def clear_observations() -> int:
    return QuotaObservation.delete().execute()


def void_history_for_forecasts(since: float) -> int:
    """reset-usage: readings since `since` stay on the chart but no longer feed a forecast."""
    return (
        QuotaHistory.update(voided=True)
        .where((QuotaHistory.observed_at >= since) & (QuotaHistory.voided == False))
        .execute()
    )


# --- when the next read may go (R-GAUGE-3), across a restart (R-OBS-2) ------------------------


def save_poll(
    account_id: int, started_at: float | None, blocked_until: float | None, revision: int | None
) -> None:
    """One account's poll floor start (and the revision it was taken under) and the
    endpoint's back-off, as they stand now."""
    if Account.get_or_none(Account.id == account_id) is None:
        return  # deleted meanwhile: nothing left to hold back
    QuotaPoll.insert(
        account=account_id, started_at=started_at, blocked_until=blocked_until, revision=revision
    ).on_conflict_replace().execute()


def load_polls() -> dict[int, tuple[float | None, float | None, int | None]]:
    """account id -> (last read's start, endpoint back-off end, the revision the start was
    taken under: core.quota.PollMarks)."""
    return {
        row.account_id: (row.started_at, row.blocked_until, row.revision)
        for row in QuotaPoll.select()
    }


def lift_poll_floors() -> int:
    """reset-usage: every account may be read at once; the endpoint's back-off stays."""
    return QuotaPoll.update(started_at=None).execute()
