"""The desktop's event loop: qasync with a ready queue and direct socket callbacks. It must keep
asyncio's promises: call_soon in order, cancelled handles skipped, sockets served."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from sublane_desktop.gui.event_loop import DesktopEventLoop


@pytest.fixture
def loop(qapp):
    loop = DesktopEventLoop(qapp)
    yield loop
    loop.close()


def test_call_soon_runs_in_order_and_skips_cancelled(loop):
    seen: list[str] = []

    async def main() -> None:
        loop.call_soon(seen.append, "a")
        loop.call_soon(seen.append, "b").cancel()
        loop.call_soon(lambda: loop.call_soon(seen.append, "d"))  # scheduled while draining
        loop.call_soon(seen.append, "c")
        while len(seen) < 3:
            await asyncio.sleep(0)

    loop.run_until_complete(main())
    assert seen == ["a", "c", "d"]


def test_http_round_trips_over_its_sockets(loop):
    async def main() -> list[int]:
        app = web.Application()

        async def hello(request: web.Request) -> web.Response:
            return web.json_response({"n": int(request.query["n"])})

        app.router.add_get("/", hello)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            async with aiohttp.ClientSession() as session:

                async def get(n: int) -> int:
                    async with session.get(f"http://127.0.0.1:{port}/?n={n}") as r:
                        return (await r.json())["n"]

                return list(await asyncio.gather(*(get(n) for n in range(50))))
        finally:
            await runner.cleanup()

    assert loop.run_until_complete(asyncio.wait_for(main(), 30)) == list(range(50))


def test_delayed_callbacks_run_in_deadline_order_and_cancelled_ones_never(loop):
    seen: list[str] = []

    async def main() -> None:
        done = asyncio.Event()
        loop.call_later(0.03, seen.append, "late")
        loop.call_later(0.01, seen.append, "early")
        loop.call_later(0.02, seen.append, "cancelled").cancel()
        loop.call_at(loop.time() + 0.015, seen.append, "middle")
        loop.call_later(0.04, done.set)
        await done.wait()

    loop.run_until_complete(asyncio.wait_for(main(), 10))
    assert seen == ["early", "middle", "late"]


def test_timeouts_fire_and_cancelled_timeouts_leave_nothing_behind(loop):
    """A proxied request sets and cancels several long timeouts; they must not pile up."""

    async def main() -> bool:
        for _ in range(5000):  # what a burst of requests leaves: two-minute timeouts, cancelled
            async with asyncio.timeout(120):
                await asyncio.sleep(0)
        try:
            async with asyncio.timeout(0.01):
                await asyncio.Event().wait()
        except TimeoutError:
            return True
        return False

    assert loop.run_until_complete(asyncio.wait_for(main(), 30)) is True
    assert len(loop._timers) < 200  # compacted: no heap of dead two-minute timers


def test_callbacks_that_keep_scheduling_callbacks_still_let_qt_run(loop):
    """A drain continues with what its callbacks schedule, but only for a moment: a busy
    proxy must not starve the widgets (painting, clicks) or Qt's own timers."""
    from PySide6.QtCore import QTimer

    qt_ran = asyncio.Event()
    spins = 0

    def spin() -> None:
        nonlocal spins
        spins += 1
        if not qt_ran.is_set():
            loop.call_soon(spin)

    async def main() -> int:
        QTimer.singleShot(5, qt_ran.set)  # a Qt timer, not the loop's
        loop.call_soon(spin)
        await qt_ran.wait()
        return spins

    assert loop.run_until_complete(asyncio.wait_for(main(), 10)) > 0


def test_a_coroutine_function_as_a_callback_is_refused_in_debug_mode(loop):
    """As asyncio does: the check runs in debug mode only, where a developer looks for such
    mistakes; the busy proxy loop does not pay for it on every callback."""

    async def coroutine_function() -> None:
        pass

    loop.set_debug(True)
    with pytest.raises(TypeError, match="coroutine"):
        loop.call_soon(coroutine_function)
    with pytest.raises(TypeError, match="coroutine"):
        loop.call_later(1.0, coroutine_function)
    with pytest.raises(TypeError, match="callable"):
        loop.call_at(loop.time() + 1.0, "not callable")


def test_sockets_are_watched_as_asyncio_watches_them(loop):
    """One selector behind one Qt notifier: a reader and a writer on one socket both run, a
    replaced reader never runs again, removing says whether anything was watched, and every
    ready socket is served (ten socket pairs written at once)."""
    import socket

    pairs = [socket.socketpair() for _ in range(10)]
    seen: list[str] = []

    async def main() -> None:
        a, b = pairs[0]
        loop.add_reader(a, seen.append, "old reader")
        loop.add_reader(a, lambda: seen.append(a.recv(64).decode()))  # replaces it
        loop.add_writer(a, lambda: (seen.append("writable"), loop.remove_writer(a)))
        b.send(b"first")
        while len(seen) < 2:
            await asyncio.sleep(0)
        assert loop.remove_writer(a) is False  # the reader is still watched; no writer is
        assert loop.remove_reader(a) is True
        assert loop.remove_reader(a) is False
        got: list[int] = []
        for i, (x, _) in enumerate(pairs[1:]):
            loop.add_reader(x, lambda x=x, i=i: (got.append(i), x.recv(64), loop.remove_reader(x)))
        for _, y in pairs[1:]:
            y.send(b"x")
        while len(got) < 9:
            await asyncio.sleep(0)
        assert sorted(got) == list(range(9))

    try:
        loop.run_until_complete(asyncio.wait_for(main(), 5))
    finally:
        for x, y in pairs:
            x.close()
            y.close()
    assert sorted(seen) == ["first", "writable"]
