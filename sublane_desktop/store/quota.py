"""Quota observations: saved before they are published, conditional on the lifecycle revision."""

from __future__ import annotations

from collections.abc import Iterable

from sublane_desktop.core.gauges import Observation
from sublane_desktop.store.models import Account, QuotaObservation


def save_observations(account_id: int, revision: int, observations: Iterable[Observation]
                      ) -> bool:
    """Store the readings only if the account is still at `revision` (R-GAUGE-4).

    Freshest wins here too: an older reading never overwrites a newer stored one. Returns
    False when the revision moved on (a re-auth or disable happened meanwhile).
    """
    current = Account.select(Account.revision).where(Account.id == account_id).scalar()
    if current != revision:
        return False
    for obs in observations:
        existing = QuotaObservation.get_or_none(
            (QuotaObservation.account == account_id) & (QuotaObservation.window == obs.window))
        if existing is not None and existing.revision == revision and \
                existing.observed_at > obs.observed_at:
            continue
        QuotaObservation.insert(
            account=account_id, window=obs.window, utilization=obs.utilization,
            resets_at=obs.resets_at, observed_at=obs.observed_at, source=obs.source,
            rejected=obs.rejected, revision=revision,
        ).on_conflict_replace().execute()
    return True


def load_observations() -> dict[int, list[Observation]]:
    """Stored readings whose revision still matches their account's (older ones are void)."""
    revisions = {a.id: a.revision for a in Account.select(Account.id, Account.revision)}
    found: dict[int, list[Observation]] = {}
    for row in QuotaObservation.select():
        if revisions.get(row.account_id) != row.revision:
            continue
        found.setdefault(row.account_id, []).append(Observation(
            row.window, row.utilization, row.resets_at, row.observed_at, row.source,
            bool(row.rejected)))
    return found


def clear_observations() -> int:
    return QuotaObservation.delete().execute()
