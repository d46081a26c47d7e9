"""Host / Origin / content-type guards (SPEC §7), as aiohttp middlewares."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.proxy.errors import render_for

LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]", "localhost.localdomain"}
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def _hostname(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_allowed(host_header: str | None, bound_host: str) -> bool:
    """DNS-rebinding guard: only the bound address or a localhost name may be addressed."""
    if not host_header:
        return False
    name = _hostname(host_header)
    return name in LOCAL_NAMES or name == bound_host.lower() or name.endswith(".localhost")


def origin_allowed(origin: str | None, bound_host: str) -> bool:
    """A browser page on another site must not drive our management mutations."""
    if origin is None:
        return True  # not a browser cross-site request
    if origin == "null":
        return False
    host = urlsplit(origin).hostname or ""
    return host in LOCAL_NAMES or host == bound_host.lower() or host.endswith(".localhost")


def make_host_guard(bound_host: str):
    @web.middleware
    async def host_guard(request: web.Request, handler):
        if not host_allowed(request.headers.get("Host"), bound_host):
            err = GatewayError("forbidden", "Host header is not this server's address")
            return render_for(request.path)(err)
        if request.method in MUTATING and request.path.startswith(("/api/", "/llmux/")):
            if not origin_allowed(request.headers.get("Origin"), bound_host):
                return render_for(request.path)(
                    GatewayError("forbidden", "cross-origin requests are not accepted")
                )
        return await handler(request)

    return host_guard
