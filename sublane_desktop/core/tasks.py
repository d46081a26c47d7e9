"""Background tasks that cannot vanish: every task is named and referenced until it ends.

Bare asyncio.create_task drops the only reference, so the GC may collect a running task; this
helper keeps one and logs a crash instead of losing it (mitmproxy's rule).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_running: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _running.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed: %r", task.get_name(), task.exception())


async def drain(timeout: float) -> None:
    """Wait (bounded) for the running background tasks, e.g. at shutdown."""
    pending = [t for t in _running if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=timeout)
