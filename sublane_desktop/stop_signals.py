"""SIGINT and SIGTERM ask for the same graceful stop as Quit (R-FT-8), headless and in the tray.

The handler only calls `request_stop` on the loop; it never raises. Python's default SIGINT
handler raises KeyboardInterrupt in whatever Python code runs next, which in the tray app is a
Qt callback (an event filter), where it is printed and swallowed on every Ctrl-C. On POSIX the
loop's own `add_signal_handler` is used: asyncio's self-pipe wakes the loop (qasync watches it
with a QSocketNotifier), so the stop is handled even while Qt sits in its C++ event loop.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

STOP_SIGNALS = tuple(
    s
    for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGBREAK", None))
    if s is not None
)


def on_stop_signals(
    loop: asyncio.AbstractEventLoop, request_stop: Callable[[], None]
) -> Callable[[], None]:
    """Route SIGINT/SIGTERM to `request_stop` on `loop`; returns a function that undoes it."""
    on_loop: list[int] = []
    replaced: dict[int, Any] = {}
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, request_stop)
            on_loop.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            # Windows loops have no add_signal_handler: a plain handler that only schedules the
            # stop. (The tray app keeps a timer running so Python gets to run it.)
            def schedule(_signum: int, _frame: FrameType | None) -> None:
                loop.call_soon_threadsafe(request_stop)

            replaced[sig] = signal.signal(sig, schedule)

    def restore() -> None:
        for sig in on_loop:
            loop.remove_signal_handler(sig)
        for sig, previous in replaced.items():
            signal.signal(sig, previous)

    return restore
