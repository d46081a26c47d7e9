"""R-UI-14: an account that comes into service has its quota read at once.

An account comes into service when it is added or imported, enabled, or signed in again (a new
lifecycle revision). That happens through this service's own methods (the desktop app, the
management API) or in another process (the CLI writes the database; this service takes the
change up when it re-reads its catalog: on a request, on a management call, and on the
credential watch's look every few seconds). Every one of those ways ends in the pool's account
list, so the rule looks there, and only there: after each catalog re-read and each enable, the
accounts enabled under a revision it has not seen before get a usage read, skipping the poll
floor (a new credential or lifecycle voids what the floor protected) but never the usage
endpoint's own retry-after, and inside the global cap's metadata slot, like every read
(`core/quota.QuotaRefresher`). Without it a person who adds an account with the CLI or the API
saw "no quota data yet" until traffic came and the poll floor allowed a read.

An account that serves again after a pause is no arrival (same credential, same lifecycle), but
nothing read it while it was paused: no traffic went through it and polls skip paused accounts.
So unpausing reads it at once when its gauges are stale or cold, as its first request would, and
within the poll floor (an account paused for a minute shows the reading it had; pausing and
unpausing in a row polls once per floor). Without it the tray showed the old bars as stale, or
cold ones, until traffic came through it.

A server start is no arrival: it reads the accounts whose gauges are cold or stale (never read,
or read by a run that ended a while ago), within the poll floor and the retry-after a previous
run left (R-OBS-2), so an account the CLI added while no server ran, and the bars of yesterday,
are fresh as soon as a server starts, and a server restarted in a loop does not poll each time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sublane_desktop.service import Service


class FreshGauges:
    def __init__(self, service: Service) -> None:
        self.service = service
        # account id -> (the revision it was last seen enabled under, whether it was paused);
        # None before start()
        self._seen: dict[int, tuple[int, bool]] | None = None

    def start(self) -> None:
        """The server is ready to read (store, keyring, HTTP session): from now on, arrivals
        are read; the accounts never read yet are read now."""
        self._seen = self._in_service()
        quota = self.service.quota
        # What traffic would read (stale or cold gauges), not forced: the poll floor and the
        # endpoint's retry-after outlive a restart, so a restart loop polls nothing more.
        quota.read_if_stale(quota.candidates())

    def stop(self) -> None:
        """The server is stopping: no read may start into its closing session."""
        self._seen = None

    def look(self) -> None:
        """After the account list may have changed, or an account was paused or unpaused: read
        the accounts that just came in, and those back from a pause whose gauges aged."""
        if self._seen is None:  # starting: start() decides what the start reads
            return
        now_in = self._in_service()
        arrived: list[int] = []
        unpaused: list[int] = []
        for account_id, (revision, paused) in now_in.items():
            before = self._seen.get(account_id)
            if before is None or before[0] != revision:
                arrived.append(account_id)  # (read once it is unpaused, if it is paused)
            elif before[1] and not paused:
                unpaused.append(account_id)
        self._seen = now_in
        if arrived:
            self.service.quota.read_new(arrived)
        if unpaused:
            self.service.quota.read_unpaused(unpaused)

    def _in_service(self) -> dict[int, tuple[int, bool]]:
        return {
            a.id: (a.revision, a.paused) for a in self.service.pool.accounts.values() if a.enabled
        }
