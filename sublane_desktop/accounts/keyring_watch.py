"""When to read an account's keyring entry again, so a credential that vanished is noticed
(R-LOGIN-4: `auth_failed` with the reason at its next use or within a minute).

The credential cache keeps each account's credential in memory; without these rules a keyring
entry deleted behind SubLane's back (a keyring manager, another tool, a restored profile) went
unnoticed until a restart. The decision, in order:

1. At each use (a request, a quota read, a verify) the entry must have been read under the
   account's current revision. A keyring that can say cheaply whether it changed (a keyring
   file: `SecretStore.stamp`) is trusted while its stamp is the one taken before that read, so
   a deleted entry is seen by the very next use; one that cannot say (the OS keyrings) is read
   again when the last read is older than REREAD_ON_USE_S.
2. In the background, every enabled account with no known credential problem is read again
   when the keyring's stamp moved since its last read, or when that read is older than
   REREAD_IN_BACKGROUND_S. The watch looks every LOOK_EVERY_S (and the management API's
   account list looks too), so an idle account's vanished credential shows within LOOK_EVERY_S
   on a keyring file and within REREAD_IN_BACKGROUND_S + LOOK_EVERY_S (55 s) on the OS
   keyrings, under the minute the rule allows. (A missing credential waits for a new one; a
   keyring that could not be read is asked again by a use only, see 3.)
3. A keyring that could not be read is asked again by a use once RETRY_UNREADABLE_S have
   passed since it failed, and the uses between fail at once with the reason: a locked
   desktop keyring asks the person to unlock it at every read, and a hung one makes every
   read wait out its timeout. A person's verify asks it at once.

Ages are read on the injected clock, so tests move time instead of waiting; only the watch's
wake-ups are real time (and tests shorten them).
"""

from __future__ import annotations

from dataclasses import dataclass

REREAD_ON_USE_S = 1.0
RETRY_UNREADABLE_S = 30.0
REREAD_IN_BACKGROUND_S = 50.0
LOOK_EVERY_S = 5.0


@dataclass(frozen=True)
class Reading:
    """One successful read of an account's entry."""

    revision: int
    at: float  # clock.monotonic() when the read began
    stamp: tuple[int, ...] | None  # the keyring's stamp taken just before the read


class Readings:
    """The last successful read of each account's keyring entry."""

    def __init__(self) -> None:
        self._last: dict[int, Reading] = {}
        # When the keyring last failed to answer for the account (it counts while the failure's
        # reason stands: a read that works clears the reason).
        self._failed: dict[int, float] = {}

    def record(
        self, account_id: int, revision: int, at: float, stamp: tuple[int, ...] | None
    ) -> None:
        self._last[account_id] = Reading(revision, at, stamp)

    def record_failure(self, account_id: int, at: float) -> None:
        """The keyring could not be read: nothing in memory is trusted until it answers."""
        self._last.pop(account_id, None)
        self._failed[account_id] = at

    def forget(self, account_id: int) -> None:
        self._last.pop(account_id, None)
        self._failed.pop(account_id, None)

    def retry_due(self, account_id: int, now: float) -> bool:
        """Rule 3: may a use ask the keyring again, after it failed to answer?"""
        failed = self._failed.get(account_id)
        return failed is None or now - failed >= RETRY_UNREADABLE_S

    def good_for_use(
        self, account_id: int, revision: int, now: float, stamp: tuple[int, ...] | None
    ) -> bool:
        """Rule 1: may a use go on with the credential in memory, without reading the entry?"""
        last = self._last.get(account_id)
        if last is None or last.revision != revision:
            return False
        if stamp is not None and last.stamp is not None:
            return stamp == last.stamp
        return now - last.at < REREAD_ON_USE_S

    def due_in_background(
        self, account_id: int, revision: int, now: float, stamp: tuple[int, ...] | None
    ) -> bool:
        """Rule 2: is the entry due a read by the watch?"""
        last = self._last.get(account_id)
        if last is None or last.revision != revision:
            return True
        if stamp is not None and last.stamp is not None and stamp != last.stamp:
            return True
        return now - last.at >= REREAD_IN_BACKGROUND_S
