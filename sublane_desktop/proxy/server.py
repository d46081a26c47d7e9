"""The aiohttp application and its lifecycle."""

from __future__ import annotations

import socket
from typing import Any

from aiohttp import web

from sublane_desktop.proxy import (
    SERVICE,
    chat,
    history,
    management,
    metrics,
    models,
    responses,
)
from sublane_desktop.proxy.connections import GuardedSite
from sublane_desktop.proxy.errors import error_shape, mark_started
from sublane_desktop.proxy.guards import make_host_guard
from sublane_desktop.proxy.messages import MessagesRoute


async def healthz(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    return web.json_response(
        {
            "ok": True,
            "name": "sublane",
            "port": service.port,
            "records_dropped": service.request_log.dropped,
        }
    )


def build_app(service: Any, *, max_body: int) -> web.Application:
    # error_shape is outermost, so even a guard's own failure answers in a protocol's shape.
    app = web.Application(
        client_max_size=max_body, middlewares=[error_shape, make_host_guard(service.host)]
    )
    app[SERVICE] = service
    app.on_response_prepare.append(mark_started)
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/v1/messages", MessagesRoute("messages").handle)
    app.router.add_post("/v1/messages/count_tokens", MessagesRoute("count_tokens").handle)
    app.router.add_post("/v1/responses", responses.ResponsesRoute().handle)
    app.router.add_get("/v1/responses", responses.ResponsesSocket().handle)
    app.router.add_post("/v1/responses/compact", responses.CompactRoute().handle)
    app.router.add_post("/v1/chat/completions", chat.ChatRoute().handle)
    app.router.add_get("/v1/models", models.list_models)
    management.add_routes(app)
    history.add_routes(app)
    metrics.add_routes(app)  # GET /metrics (R-OBS-1)
    return app


class ProxyServer:
    def __init__(self, app: web.Application, host: str, port: int, **gate_options: Any) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.gate_options = gate_options  # tests shorten the connection gate's bounds
        self.site: GuardedSite | None = None
        # A client that goes away cancels its handler, which cancels the upstream request and
        # releases the lease on the spot instead of at the next chunk.
        self.runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )

    async def start(self) -> int:
        await self.runner.setup()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(512)
            sock.setblocking(False)
        except BaseException:  # port taken or invalid: the caller explains; no socket leaks
            sock.close()
            raise
        self.site = site = GuardedSite(self.runner, sock, self.gate_options)
        await site.start()
        self.port = sock.getsockname()[1]
        return self.port

    async def stop(self) -> None:
        await self.runner.cleanup()
