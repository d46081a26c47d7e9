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
