"""When quota reads happen (R-GAUGE-3): only because of traffic or a person, never idly.

At most two reads at once, inside the global cap; a second ask for the same account joins
the read already running; one read per account per poll floor (5 min), none while the
endpoint's own retry-after runs. The reading and saving are injected, so this stays pure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from sublane_desktop.core.clock import Clock
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.tasks import spawn

log = logging.getLogger(__name__)

MAX_CONCURRENT_READS = 2
POLL_FLOOR_SECONDS = 300.0
# An endpoint's retry-after is believed up to a day. It is kept across restarts (R-OBS-2), so a
# nonsense value (or a wall clock put back while we were closed) must not stop reads for good.
MAX_ENDPOINT_BACKOFF_SECONDS = 86400.0


class QuotaReadError(Exception):
    """A read failed; `retry_after` is the endpoint's own back-off when it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PollMarks(NamedTuple):
    """When an account's quota may be read again, as kept across a restart (R-OBS-2).
    Wall-clock seconds, like every deadline that must outlive us."""

    started: float | None  # the last read's start: the poll floor counts from it
    blocked: float | None  # the end of the usage endpoint's own retry-after
    # The account revision the floor was taken under. The floor belongs to that credential and
    # lifecycle: a re-sign-in or re-enable (even by the CLI while no server ran) voids it, so
    # the new revision is read at once; the endpoint's retry-after is the endpoint's and stays.
    revision: int | None


Reader = Callable[[Any], Awaitable[list[Observation]]]
Publisher = Callable[[Any, int, list[Observation]], Awaitable[bool]]
# Told an account's marks whenever one changes, so a restart keeps them (R-OBS-2).
Remember = Callable[[int, PollMarks], None]


class QuotaRefresher:
    def __init__(
        self,
        clock: Clock,
        *,
        read: Reader,
        publish: Publisher,
        take_slot: Callable[[], bool],
        give_slot: Callable[[], None],
        floor_seconds: float = POLL_FLOOR_SECONDS,
        max_concurrent: int = MAX_CONCURRENT_READS,
        remember: Remember | None = None,
    ) -> None:
        self.clock = clock
        self._read = read
        self._publish = publish
        self._take_slot = take_slot
        self._give_slot = give_slot
        self.floor_seconds = floor_seconds
        self._gate = asyncio.Semaphore(max_concurrent)
        self._running: dict[int, asyncio.Task[bool]] = {}
        self._last_start: dict[int, float] = {}
        self._floor_revision: dict[int, int | None] = {}  # the revision each floor belongs to
        self._blocked_until: dict[int, float] = {}  # the endpoint's own retry-after
        self._remember = remember or (lambda account_id, marks: None)
        # account id -> why its last read failed, in words (a sign-in says it); cleared by a
        # read that lands
        self.failures: dict[int, str] = {}
        self.reads = 0  # reads actually sent (tests and the trace look at this)

    def restore(self, polls: dict[int, tuple[float | None, float | None, int | None]]) -> None:
        """At start: the floors and back-offs a previous run left (R-OBS-2), each floor with
        the revision it was taken under (`PollMarks`).

        A start time in the future means the wall clock went back since it was written; it
        counts as now, so the floor holds for at most its own length instead of until the clock
        catches up; a back-off holds at most a day from now. One that already ended is left out.
        """
        now = self.clock.now()
        for account_id, (started, blocked, revision) in polls.items():
            if started is not None:
                self._last_start[account_id] = min(started, now)
                self._floor_revision[account_id] = revision
            if blocked is not None and blocked > now:
                self._blocked_until[account_id] = min(blocked, now + MAX_ENDPOINT_BACKOFF_SECONDS)

    def _save(self, account_id: int) -> None:
        self._remember(
            account_id,
            PollMarks(
                self._last_start.get(account_id),
                self._blocked_until.get(account_id),
                self._floor_revision.get(account_id),
            ),
        )

    def due(self, account: Any, now: float) -> bool:
        if now < self._blocked_until.get(account.id, 0.0):
            return False
        last = self._last_start.get(account.id)
        if last is None or self._floor_revision.get(account.id) != account.revision:
            return True  # never read, or read under an older credential / lifecycle
        return now - last >= self.floor_seconds

    def want(self, accounts: Iterable[Any], *, force: bool = False) -> list[asyncio.Task[bool]]:
        """Start background refreshes; never waits. `force` (a person asked) skips the floor
        but never the endpoint's retry-after."""
        now = self.clock.now()
        started = []
        for account in accounts:
            running = self._running.get(account.id)
            if running is not None:
                started.append(running)  # duplicates coalesce
                continue
            if now < self._blocked_until.get(account.id, 0.0):
                continue
            if not force and not self.due(account, now):
                continue
            self._last_start[account.id] = now
            self._floor_revision[account.id] = account.revision
            self._save(account.id)
            task = spawn(self._refresh(account), name=f"quota-read-{account.id}")
            self._running[account.id] = task
            started.append(task)
        return started

    @property
    def running(self) -> int:
        """Reads started and not yet finished (a test can see that traffic started none)."""
        return len(self._running)

    def lift_floor(self) -> None:
        """reset-usage: feeds repopulate at once (the endpoint's retry-after still holds).
        The caller clears the saved floors too (one write for all accounts)."""
        self._last_start.clear()

    async def _refresh(self, account: Any) -> bool:
        revision = account.revision
        try:
            async with self._gate:
                if not self._take_slot():
                    log.info("quota read for account %s skipped: global cap full", account.id)
                    self._last_start.pop(account.id, None)
                    self._save(account.id)
                    return False
                try:
                    self.reads += 1
                    observations = await self._read(account)
                finally:
                    self._give_slot()
            if not observations:
                return False
            published = await self._publish(account, revision, observations)
            if published:
                self.failures.pop(account.id, None)
            return published
        except QuotaReadError as exc:
            self.failures[account.id] = str(exc)
            # The last good observation stays, and still expires at its own deadline.
            if exc.retry_after:
                wait = min(exc.retry_after, MAX_ENDPOINT_BACKOFF_SECONDS)
                self._blocked_until[account.id] = self.clock.now() + wait
                self._save(account.id)
            log.warning("quota read for account %s failed: %s", account.id, exc)
            return False
        finally:
            self._running.pop(account.id, None)
