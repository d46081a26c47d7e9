"""Request records: queued without blocking the loop, written by one writer (R-REC-4).

The latest records of this process are also kept in memory for live views and quick checks;
the history API reads the database, which is the only complete source.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from sublane_desktop.core.clock import Clock
from sublane_desktop.core.events import EventBus
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.store.connection import Store
from sublane_desktop.store.records import RequestLog

RECENT_RECORDS = 100


def recorded_requests(store: Store, now: float) -> list[dict[str, Any]]:
    """The retained request records, oldest first, for the simulator's recorded trace."""
    from sublane_desktop.store import records

    with store.db.atomic():
        records.prune(now)  # cleanup on read, as the server does
    return records.trace_rows(now)


class RequestHistory:
    def __init__(self, clock: Clock, bus: EventBus) -> None:
        self.recent: deque[RequestRecord] = deque(maxlen=RECENT_RECORDS)
        self.log = RequestLog(
            clock, on_written=lambda count: bus.publish("records.added", count=count))

    def record(self, record: RequestRecord) -> None:
        """Queue a request record; never blocks the loop (R-ARCH-3, R-REC-4)."""
        self.recent.append(record)
        self.log.add(record)

    async def flush(self) -> None:
        """Wait until every record so far is in the database (tests, shutdown)."""
        await self.log.flush()
