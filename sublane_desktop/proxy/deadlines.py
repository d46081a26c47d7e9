"""Many requests' deadlines on one timer: the upstream header clock of R-FT-1.

`asyncio.timeout(delay)` arms a timer per request, and the header clock re-arms it once the
request has its connection: two timer-heap pushes and two cancellations per request, about
5 % of the busy proxy's CPU (py-spy). Here each watched request is an `asyncio.Timeout` entered
with no deadline of its own, and its deadline sits in a table. One loop timer is set for the
earliest deadline; when it fires, every request then due is expired through the Timeout's own
`reschedule`, so the request sees the usual `TimeoutError` and `expired()`. A request that
ends only leaves the table; the timer may then fire for nothing, about once per limit.
"""

from __future__ import annotations

import asyncio
import math
import weakref

# The loop may run a timer a hair before its time (its clock resolution); a deadline this
# close is due, so the timer is never re-armed for the same instant.
_SLACK = 0.001


class Deadlines:
    """The deadlines of the requests in flight on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.time = loop.time
        self._due: dict[asyncio.Timeout, float] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def set(self, timeout: asyncio.Timeout, when: float) -> None:
        """Expire `timeout` (entered, with no deadline of its own) at loop time `when`."""
        self._due[timeout] = when
        if when < self._armed_for:
            self._arm(when)

    def drop(self, timeout: asyncio.Timeout) -> None:
        self._due.pop(timeout, None)

    def __len__(self) -> int:
        return len(self._due)

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(when, self._fire)
        self._armed_for = when

    def _fire(self) -> None:
        self._handle, self._armed_for = None, math.inf
        now = self._loop.time()
        soonest = math.inf
        for timeout, when in list(self._due.items()):
            if when <= now + _SLACK:
                del self._due[timeout]
                timeout.reschedule(now)  # a past deadline: the Timeout expires right away
            elif when < soonest:
                soonest = when
        if soonest < math.inf:
            self._arm(soonest)


_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = (
    weakref.WeakKeyDictionary()
)
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], Deadlines] | None = None


def deadlines() -> Deadlines:
    """The running loop's table (the last one looked up is answered without a dict lookup)."""
    global _last
    loop = asyncio.get_running_loop()
    if _last is not None and _last[0]() is loop:
        return _last[1]
    table = _per_loop.get(loop)
    if table is None:
        table = _per_loop[loop] = Deadlines(loop)
    _last = (weakref.ref(loop), table)
    return table
