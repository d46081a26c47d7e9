"""Client connections the server is willing to hold (R-FT-12).

aiohttp waits forever for a client that opens a connection and never finishes its request
headers, and accepts as many connections as arrive; either way a misbehaving local program could
starve the proxy. Every connection passes through a `ConnectionGate` here:

1. At most MAX_CONNECTIONS are held at once; one more is closed on arrival.
2. A connection whose first request headers are not complete within HEADER_DEADLINE_S is
   dropped. Later requests on a kept-alive connection are bounded by aiohttp's keep-alive
   timeout; a request that is being answered is never touched.
3. What aiohttp answers by itself, before any route or middleware runs (a request its HTTP
   parser refuses: a duplicate Content-Type, a bad header byte), is in the error shape of the
   route it was meant for too, with a request id (R-FT-3), and is logged in one line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.ids import new_request_id
from sublane_desktop.proxy.errors import render_for

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 512
HEADER_DEADLINE_S = 30.0
_END_OF_HEADERS = b"\r\n\r\n"


_PARSER_CODES = {400: "invalid_request", 413: "request_too_large", 431: "invalid_request"}


class ShapedRequestHandler(RequestHandler):
    """aiohttp's connection handler, with its own error answers in our error shape."""

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        request_id = new_request_id()
        log.info(
            "refused a malformed request (%s, request %s): %s",
            status,
            request_id,
            type(exc).__name__ if exc is not None else "",
        )
        if request.writer.output_size > 0:
            raise ConnectionError("a response was already under way")
        reason = (message or "").splitlines()[0][:160] if status < 500 else ""
        err = GatewayError(
            _PARSER_CODES.get(status, "internal_error"),
            reason or "the request could not be read",
            status=status,
        )
        response = render_for(str(request.path))(err, request_id)
        response.force_close()
        return response


def shaped_handler_factory(server: web.Server) -> Callable[[], asyncio.Protocol]:
    # The same construction as web.Server.__call__, with our handler class.
    kwargs = server._kwargs
    return lambda: ShapedRequestHandler(server, loop=asyncio.get_running_loop(), **kwargs)


class ConnectionGate:
    """A protocol factory around aiohttp's: counts live connections and times the headers."""

    def __init__(
        self,
        factory: Callable[[], asyncio.Protocol],
        *,
        limit: int = MAX_CONNECTIONS,
        header_deadline: float = HEADER_DEADLINE_S,
    ) -> None:
        self.factory = factory
        self.limit = limit
        self.header_deadline = header_deadline
        self.open = 0
        self.refused = 0
        self.dropped_slow = 0

    def __call__(self) -> asyncio.Protocol:
        return GuardedConnection(self)


class GuardedConnection(asyncio.Protocol):
    """One client connection: aiohttp's protocol inside, the gate's rules around it."""

    def __init__(self, gate: ConnectionGate) -> None:
        self.gate = gate
        self.inner: Any = None
        self.transport: asyncio.Transport | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.tail = b""  # the last bytes seen, for an end-of-headers split across reads

    def connection_made(self, base: asyncio.BaseTransport) -> None:
        # A listening TCP server hands out stream transports (which can abort); the base class
        # is typed for every kind of transport.
        transport = cast(asyncio.Transport, base)
        gate = self.gate
        self.transport = transport
        if gate.open >= gate.limit:
            gate.refused += 1
            if gate.refused == 1 or gate.refused % 100 == 0:
                log.warning(
                    "%d client connections open; refusing more (%d so far)", gate.open, gate.refused
                )
            transport.abort()
            return
        gate.open += 1
        self.inner = gate.factory()
        self.inner.connection_made(transport)
        self.deadline = asyncio.get_running_loop().call_later(gate.header_deadline, self._too_slow)

    def data_received(self, data: bytes) -> None:
        if self.deadline is not None:
            seen = self.tail + data
            if _END_OF_HEADERS in seen:
                self.deadline.cancel()
                self.deadline = None
                self.tail = b""
            else:
                self.tail = seen[-3:]
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self.inner is not None:
            self.gate.open -= 1
            inner, self.inner = self.inner, None
            inner.connection_lost(exc)

    def _too_slow(self) -> None:
        self.deadline = None
        self.gate.dropped_slow += 1
        log.info(
            "dropped a client connection that sent no complete request headers in %gs",
            self.gate.header_deadline,
        )
        if self.transport is not None:
            self.transport.abort()


class GuardedSite(web.SockSite):
    """aiohttp's SockSite with every connection going through a ConnectionGate."""

    def __init__(self, runner: web.BaseRunner, sock: Any, gate_options: dict[str, Any]) -> None:
        super().__init__(runner, sock)
        self.gate: ConnectionGate | None = None
        self._gate_options = gate_options

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None
        self.gate = ConnectionGate(shaped_handler_factory(server), **self._gate_options)
        self._server = await asyncio.get_running_loop().create_server(
            self.gate, sock=self._sock, backlog=self._backlog
        )
