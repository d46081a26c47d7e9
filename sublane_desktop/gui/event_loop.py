"""The qasync loop the desktop runs on, with asyncio's own "ready queue" for call_soon.

qasync runs every `call_soon` callback through its own Qt timer (startTimer, a timer event,
killTimer). A proxied request schedules about ten of them, and the timer round-trips cost more
than the callbacks (bench_proxy --tray: the tray's overhead was well above `serve`'s with no
window open). Here callbacks that are ready now go into one queue that a single zero-interval
timer drains. A drain goes on with what its callbacks schedule (a task's next step, a future's
callbacks) for up to DRAIN_BUDGET_S, then leaves the rest to the next turn of the Qt loop, so
widgets still paint and sockets are still polled between turns: a Qt turn costs more than
asyncio's, and a request's chain of steps finishing in one turn instead of five is most of what
the tray's proxy saved (bench_proxy --tray).

A socket that became readable or writable runs its callback straight from the notifier (qasync
first queues it as one more timer callback).

Delayed callbacks (call_later / call_at) live in a heap of asyncio TimerHandles behind one
precise QTimer armed for the earliest deadline, as asyncio keeps them. qasync starts a Qt timer
per delayed callback and cannot stop it when the handle is cancelled; nearly every delayed
callback of a proxied request is a timeout that is cancelled (phase deadlines, keep-alive,
aiohttp's read timeouts), so each request left several live Qt timers behind for up to two
minutes: tens of thousands at a few hundred requests a second, each insertion into Qt's sorted
timer list slower than the last. Here a cancelled timer costs nothing until it reaches the head
of the heap, and the heap is compacted when most of it is cancelled.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import os
import selectors
import time
from collections import deque
from typing import Any

os.environ.setdefault("QT_API", "pyside6")

import qasync
from PySide6.QtCore import QSocketNotifier, Qt, QTimer

Notifiers = dict[Any, QSocketNotifier]

# Longest a drain runs callbacks scheduled by its own callbacks before Qt gets a turn.
DRAIN_BUDGET_S = 0.002


def _overloads(signal: Any) -> Any:
    """A signal indexed by its overload's signature: PySide6 supports it at run time, its
    stubs do not model it."""
    return signal


Handles = tuple[asyncio.Handle | None, asyncio.Handle | None]  # a selector key's (reader, writer)


def _swapped(data: Handles, event: int, handle: asyncio.Handle | None) -> tuple[Any, Handles]:
    """The handle `event` had, and the pair with `handle` in its place."""
    reader, writer = data
    if event == selectors.EVENT_READ:
        return reader, (handle, writer)
    return writer, (reader, handle)


class DesktopEventLoop(qasync.QEventLoop):
    # Until __init__ sets them (asyncio's own __init__ already watches its self-pipe), and
    # where the platform's selector has no descriptor: a Qt notifier per socket.
    _io_selector: selectors.BaseSelector | None = None
    _io_notifier: QSocketNotifier | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready_now: deque[asyncio.Handle] = deque()
        self._drain_timer = QTimer()
        self._drain_timer.setSingleShot(True)
        self._drain_timer.setInterval(0)
        self._drain_timer.timeout.connect(self._drain)
        self._drain_armed = False  # a Python flag: QTimer.isActive() per call_soon is a Qt call
        self._timers: list[asyncio.TimerHandle] = []
        self._armed_for = math.inf  # the deadline the delay timer is set for
        self._delay_timer = QTimer()
        self._delay_timer.setSingleShot(True)
        self._delay_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._delay_timer.timeout.connect(self._run_due)
        # Sockets: one selector (epoll, kqueue) and one notifier on its descriptor, not a Qt
        # notifier per socket. When the notifier fires, every socket that is ready is served
        # in that one Qt turn, as asyncio's loop serves all of them after one select(); a Qt
        # turn per socket cost the tray's proxy more per request than `serve` at concurrency 8
        # (bench_proxy --tray). Selectors without a descriptor (Windows) keep a notifier per
        # socket.
        selector = selectors.DefaultSelector()
        if hasattr(selector, "fileno"):
            self._io_selector = selector
            self._io_notifier = QSocketNotifier(selector.fileno(), QSocketNotifier.Type.Read)
            _overloads(self._io_notifier.activated)["int"].connect(self._io_ready)
            self._io_notifier.setEnabled(True)
        else:
            selector.close()

    def call_soon(self, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
        self._check_closed()
        if self._debug:  # as asyncio does: the check cost the tray ~3 % of its CPU (cProfile)
            self._check_callback(callback, "call_soon")
        handle = asyncio.Handle(callback, args, self, context=context)
        self._ready_now.append(handle)
        if not self._drain_armed:
            self._drain_armed = True
            self._drain_timer.start()
        return handle

    def _drain(self) -> None:
        # Disarmed first: what these callbacks schedule arms the timer for the next Qt turn.
        self._drain_armed = False
        ready = self._ready_now
        deadline = time.perf_counter() + DRAIN_BUDGET_S
        while ready:
            for _ in range(len(ready)):
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
            if time.perf_counter() >= deadline:
                break

    # delayed callbacks --------------------------------------------------------------------------

    def call_later(
        self, delay: float, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def call_at(
        self, when: float, callback: Any, *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        self._check_closed()
        if self._debug:
            self._check_callback(callback, "call_at")
        handle = asyncio.TimerHandle(when, callback, args, self, context=context)
        heapq.heappush(self._timers, handle)
        if when < self._armed_for:  # a later deadline waits for the earlier one's turn
            self._arm()
        return handle

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        # TimerHandle.cancel reports here. A handle cancelled after it ran is counted too; that
        # only brings the next compaction forward, which resets the count.
        self._timer_cancelled_count += 1
        if self._timer_cancelled_count > 100 and 2 * self._timer_cancelled_count > len(
            self._timers
        ):
            self._compact()

    def _compact(self) -> None:
        live = [handle for handle in self._timers if not handle.cancelled()]
        heapq.heapify(live)
        self._timers = live
        self._timer_cancelled_count = 0

    def _arm(self) -> None:
        timers = self._timers
        while timers and timers[0].cancelled():
            heapq.heappop(timers)
            self._timer_cancelled_count = max(0, self._timer_cancelled_count - 1)
        if not timers:
            self._armed_for = math.inf
            self._delay_timer.stop()
            return
        when = timers[0].when()
        self._armed_for = when
        self._delay_timer.start(max(0, math.ceil((when - self.time()) * 1000)))

    def _run_due(self) -> None:
        # Qt rounds to whole milliseconds: what falls due within one counts as due now.
        end = self.time() + 0.001
        timers = self._timers
        due = []
        while timers and timers[0].when() <= end:
            handle = heapq.heappop(timers)
            if handle.cancelled():
                self._timer_cancelled_count = max(0, self._timer_cancelled_count - 1)
            else:
                due.append(handle)
        self._armed_for = math.inf
        self._arm()  # before running: a callback may schedule an earlier deadline itself
        for handle in due:
            if not handle.cancelled():
                handle._run()

    # sockets ------------------------------------------------------------------------------------

    def _add_reader(self, fd: Any, callback: Any, *args: Any) -> None:
        if self._io_selector is None:
            self._watch(self._read_notifiers, QSocketNotifier.Type.Read, fd, callback, args)
        else:
            self._select(fd, selectors.EVENT_READ, asyncio.Handle(callback, args, self))

    def _add_writer(self, fd: Any, callback: Any, *args: Any) -> None:
        if self._io_selector is None:
            self._watch(self._write_notifiers, QSocketNotifier.Type.Write, fd, callback, args)
        else:
            self._select(fd, selectors.EVENT_WRITE, asyncio.Handle(callback, args, self))

    def _remove_reader(self, fd: Any) -> bool:
        if fd in self._read_notifiers:  # watched before the selector existed (the self-pipe)
            return bool(super()._remove_reader(fd))
        return self._unselect(fd, selectors.EVENT_READ)

    def _remove_writer(self, fd: Any) -> bool:
        if fd in self._write_notifiers:
            return bool(super()._remove_writer(fd))
        return self._unselect(fd, selectors.EVENT_WRITE)

    # The selector's bookkeeping is asyncio's own (selector_events): a key's data is the
    # (reader, writer) pair of handles, and a handle replaced or removed is cancelled.
    def _select(self, fd: Any, event: int, handle: asyncio.Handle) -> None:
        self._check_closed()
        selector = self._io_selector
        assert selector is not None
        try:
            key = selector.get_key(fd)
        except KeyError:
            selector.register(fd, event, _swapped((None, None), event, handle)[1])
            return
        old, data = _swapped(key.data, event, handle)
        selector.modify(fd, key.events | event, data)
        if old is not None:
            old.cancel()

    def _unselect(self, fd: Any, event: int) -> bool:
        selector = self._io_selector
        if selector is None or self.is_closed():
            return False
        try:
            key = selector.get_key(fd)
        except KeyError:
            return False
        old, data = _swapped(key.data, event, None)
        mask = key.events & ~event
        if mask:
            selector.modify(fd, mask, data)
        else:
            selector.unregister(fd)
        if old is None:
            return False
        old.cancel()
        return True

    def _io_ready(self, *_: Any) -> None:
        selector = self._io_selector
        if selector is None:
            return
        for key, mask in selector.select(0):
            reader, writer = key.data
            if mask & selectors.EVENT_READ and reader is not None and not reader._cancelled:
                reader._run()
            if mask & selectors.EVENT_WRITE and writer is not None and not writer._cancelled:
                writer._run()

    def _watch(
        self,
        notifiers: Notifiers,
        kind: QSocketNotifier.Type,
        fd: Any,
        callback: Any,
        args: tuple[Any, ...],
    ) -> None:
        self._check_closed()
        existing = notifiers.get(fd)
        if existing is not None:
            existing.setEnabled(False)
            _overloads(existing.activated)["int"].disconnect()
        notifier = QSocketNotifier(qasync._fileno(fd), kind)
        handle = asyncio.Handle(callback, args, self)
        _overloads(notifier.activated)["int"].connect(
            lambda *_: self._socket_ready(notifiers, notifier, fd, handle)
        )
        notifier.setEnabled(True)
        notifiers[fd] = notifier

    @staticmethod
    def _socket_ready(
        notifiers: Notifiers, notifier: QSocketNotifier, fd: Any, handle: asyncio.Handle
    ) -> None:
        # The callback runs now, inside the notifier's signal, so the notifier can stay on (qasync
        # turns it off and on around every callback because it runs the callback later: two Qt
        # calls and two epoll_ctl per wake-up). Level-triggered: data the callback leaves
        # unread wakes it again on the next turn, as in asyncio.
        if notifiers.get(fd) is not notifier:
            notifier.setEnabled(False)  # replaced or removed meanwhile
            return
        handle._run()

    def close(self) -> None:
        if not self.is_running():
            self._drain_timer.stop()
            self._ready_now.clear()
            self._delay_timer.stop()
            self._timers.clear()
        super().close()
        if self.is_closed() and self._io_selector is not None:
            assert self._io_notifier is not None
            self._io_notifier.setEnabled(False)
            _overloads(self._io_notifier.activated)["int"].disconnect()
            self._io_selector.close()
            self._io_selector = self._io_notifier = None
