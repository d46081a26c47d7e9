"""Why an account's credential cannot be used, in words a person can act on (R-UI-8).

The service notes a problem when reading a credential fails and forgets it when a read works
again, so the account's state says `auth_failed` with the reason instead of staying green
while every request through it fails.

Two kinds: a keyring that cannot be used at all (absent, locked, timing out) is a problem of
the machine — it ends when the keyring comes back, and is never stored as the account's own
failure; a credential missing from a working keyring, or unreadable, is the account's — it
gates the account until the person adds it again (a new revision repairs it, as after a
refused token refresh).
"""

from __future__ import annotations

KEYRING_UNAVAILABLE = (
    "the keyring is unavailable, so its credential cannot be read — set up "
    "a keyring from the Accounts window"
)
MISSING = "its credential is missing from the keyring — add the account again"
UNREADABLE = "its stored credential cannot be read — add the account again"
REFUSED = "the sign-in was refused (token refresh rejected) — sign in again and re-import"


class CredentialProblems:
    def __init__(self) -> None:
        self._reasons: dict[int, str] = {}

    def note(self, account_id: int, reason: str) -> bool:
        """Remember the reason; True when this is news (the view should refresh)."""
        if self._reasons.get(account_id) == reason:
            return False
        self._reasons[account_id] = reason
        return True

    def clear(self, account_id: int) -> bool:
        return self._reasons.pop(account_id, None) is not None

    def clear_keyring(self) -> list[int]:
        """The keyring works again: forget the problems it caused."""
        gone = [a for a, r in self._reasons.items() if r == KEYRING_UNAVAILABLE]
        for account_id in gone:
            del self._reasons[account_id]
        return gone

    def reason(self, account_id: int) -> str | None:
        return self._reasons.get(account_id)
