"""Where each imported login came from (R-LOGIN-2): one row per account, no secrets."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sublane_desktop.store.models import AccountSource


@dataclass(frozen=True)
class SourceRow:
    account_id: int
    kind: str
    location: str
    identity: str | None
    detached: bool


def remember(
    account_id: int, kind: str, location: str, identity: str | None, detached: bool
) -> None:
    """Record (or replace, on a re-import) the source of an account's login."""
    AccountSource.insert(
        account=account_id,
        kind=kind,
        location=location,
        identity=identity,
        detached=detached,
        updated_at=time.time(),
    ).on_conflict_replace().execute()


def forget(account_id: int) -> None:
    """A login that no longer comes from a tool (added by hand or signed in)."""
    AccountSource.delete().where(AccountSource.account == account_id).execute()


def source_of(account_id: int) -> SourceRow | None:
    row = AccountSource.get_or_none(AccountSource.account == account_id)
    if row is None:
        return None
    return SourceRow(row.account_id, row.kind, row.location, row.identity, bool(row.detached))
