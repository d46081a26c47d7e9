"""Request records: queued without blocking the loop, written by one writer (R-REC-4).

The latest records of this process are also kept in memory for live views and quick checks;
the history API reads the database, which is the only complete source.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from sublane_desktop.core.records import RequestRecord
from sublane_desktop.store.connection import Store
from sublane_desktop.store.records import RequestLog, admin_user_id

if TYPE_CHECKING:
    from sublane_desktop.service import Service

RECENT_RECORDS = 100


def recorded_requests(store: Store, now: float) -> list[dict[str, Any]]:
    """The retained request records, oldest first, for the simulator's recorded trace."""
    from sublane_desktop.store import records

    with store.db.atomic():
        records.prune(now)  # cleanup on read, as the server does
    return records.trace_rows(now)


class RequestHistory:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.recent: deque[RequestRecord] = deque(maxlen=RECENT_RECORDS)
        self.log = RequestLog(
            service.clock,
            on_written=lambda count: service.bus.publish("records.added", count=count),
        )

    def record(self, record: RequestRecord) -> None:
        """Queue a request record; never blocks the loop (R-ARCH-3, R-REC-4)."""
        self.recent.append(record)
        self.log.add(record)
        if record.outcome == "rejected":
            # Traffic turned away: the desktop says so when the window it waited for resets
            # (R-UI-13). Only refusals publish, so an ordinary request costs nothing more.
            self.service.bus.publish("pool.refused", provider=record.provider)

    async def flush(self) -> None:
        """Wait until every record so far is in the database (tests, shutdown)."""
        await self.log.flush()

    async def admin_user_id(self) -> int | None:
        return await self.service.db.read(admin_user_id)
