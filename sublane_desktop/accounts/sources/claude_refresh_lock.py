"""Claude Code's own refresh lock, taken by SubLane too, so the two never refresh one login at
once (R-LOGIN-2).

Claude Code 2.1.197 (read from its bundle) refreshes under a proper-lockfile lock: the directory
`<config dir>/.oauth_refresh.lock`, created with mkdir, its mtime renewed while held, taken over
when older than 10 s; it re-reads its credentials after taking it and, finding a new access
token there, uses it instead of refreshing. SubLane holds the same lock from its re-read of the
login to its write-back, so a Claude Code refresh waits (it retries for a few seconds) and then
reads what SubLane wrote, and SubLane never refreshes in the middle of one of Claude Code's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from sublane_desktop.core.tasks import spawn

log = logging.getLogger(__name__)

LOCK_NAME = ".oauth_refresh.lock"
STALE_S = 10.0  # proper-lockfile's `stale`, as Claude Code sets it
TRIES = 6  # as Claude Code: the first try and five retries, 1-2 s apart


def _take(path: Path) -> bool | None:
    """True: taken; False: held by someone; None: cannot be taken here (no such directory)."""
    try:
        path.mkdir()
        return True
    except FileExistsError:
        try:
            if time.time() - path.stat().st_mtime > STALE_S:  # its holder died: take it over
                path.rmdir()
                path.mkdir()
                return True
        except OSError:
            pass
        return False
    except OSError:
        return None


async def _keep_fresh(path: Path) -> None:
    while True:
        await asyncio.sleep(STALE_S / 2)
        with contextlib.suppress(OSError):
            os.utime(path)


@contextlib.asynccontextmanager
async def refresh_lock(
    directory: Path, wait: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> AsyncIterator[bool]:
    """Hold Claude Code's refresh lock of `directory`; yields whether it was taken (a lock that
    stays busy, or a directory that is gone, lets the refresh go ahead unlocked)."""
    path = directory / LOCK_NAME
    taken = False
    for attempt in range(TRIES):
        state = _take(path)
        if state is None:
            break
        if state:
            taken = True
            break
        if attempt < TRIES - 1:
            await wait(1.0 + random.random())
    if not taken and path.parent.exists():
        log.warning("Claude Code's refresh lock stayed busy; refreshing without it")
    keeper = spawn(_keep_fresh(path), name="claude-refresh-lock") if taken else None
    try:
        yield taken
    finally:
        if keeper is not None:
            keeper.cancel()
        if taken:
            with contextlib.suppress(OSError):
                path.rmdir()
