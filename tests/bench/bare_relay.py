"""A bare aiohttp pass-through relay: the floor any Python proxy on aiohttp can reach.

    python -m tests.bench.bare_relay UPSTREAM_URL

POST /v1/messages is sent to UPSTREAM/v1/messages with the same body and a fixed upstream
token, and the answer (status, content type, body; streamed) is passed back. No routing, no
records, no gauges: what is left is aiohttp's own cost of one hop. Prints `listening on URL`.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import aiohttp
from aiohttp import web

UPSTREAM_TOKEN = "sk-ant-oat01-bare"
# (the strict fake reads an OAuth token only with the oauth beta and from Claude Code)
PASS_HEADERS = ("content-type", "anthropic-version", "anthropic-beta", "user-agent", "x-app")


async def main(upstream: str) -> None:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), skip_auto_headers=("User-Agent",)
    )

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() in PASS_HEADERS}
        headers["Authorization"] = f"Bearer {UPSTREAM_TOKEN}"
        async with session.post(upstream + request.path, data=body, headers=headers) as up:
            response = web.StreamResponse(
                status=up.status,
                headers={"content-type": up.headers.get("content-type", "application/json")},
            )
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_post("/v1/messages", relay)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    await session.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1].rstrip("/")))
