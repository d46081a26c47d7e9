"""A bare aiohttp pass-through relay: the floor any Python proxy on aiohttp can reach.

    python -m tests.bench.bare_relay UPSTREAM_URL [CODEX_URL]

POST /v1/messages is sent to UPSTREAM/v1/messages with the same body and a fixed upstream
token, and the answer (status, content type, body; streamed) is passed back. No routing, no
records, no gauges: what is left is aiohttp's own cost of one hop. Prints `listening on URL`.

With CODEX_URL (the soak benchmark), POST /v1/responses goes to CODEX_URL/responses the same
way, with the headers the ChatGPT backend asks for, and GET /v1/responses is a WebSocket whose
every `response.create` message becomes one streamed POST there, each SSE event's data sent
back as one text message: the least a relay of Codex's WebSocket turns can do.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys

import aiohttp
from aiohttp import web

UPSTREAM_TOKEN = "sk-ant-oat01-bare"
# (the strict fake reads an OAuth token only with the oauth beta and from Claude Code)
PASS_HEADERS = ("content-type", "anthropic-version", "anthropic-beta", "user-agent", "x-app")
CODEX_HEADERS = {
    "Authorization": "Bearer codex-at-bare",
    "ChatGPT-Account-Id": "acct-bare",
    "originator": "codex_cli_rs",
    "content-type": "application/json",
}


async def main(upstream: str, codex: str | None = None) -> None:
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

    async def relay_responses(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        async with session.post(codex + "/responses", data=body, headers=CODEX_HEADERS) as up:
            response = web.StreamResponse(
                status=up.status,
                headers={"content-type": up.headers.get("content-type", "application/json")},
            )
            await response.prepare(request)
            async for chunk in up.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def relay_socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            turn = json.loads(msg.data)
            turn.pop("type", None)
            turn.update(stream=True, store=False)
            body = json.dumps(turn).encode()
            async with session.post(codex + "/responses", data=body, headers=CODEX_HEADERS) as up:
                if up.status != 200:
                    error = {"type": "error", "status": up.status, "error": await up.text()}
                    await ws.send_str(json.dumps(error))
                    continue
                async for line in up.content:
                    if line.startswith(b"data: "):
                        await ws.send_str(line[6:].decode().rstrip("\n"))
        return ws

    app = web.Application()
    app.router.add_post("/v1/messages", relay)
    if codex:
        app.router.add_post("/v1/responses", relay_responses)
        app.router.add_get("/v1/responses", relay_socket)
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
    asyncio.run(main(*(url.rstrip("/") for url in sys.argv[1:3])))
