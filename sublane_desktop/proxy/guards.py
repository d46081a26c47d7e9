"""Host / Origin / content-type guards (SPEC §7, R-FT-5), as aiohttp middlewares."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.proxy import SERVICE
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


def own_origins(bound_host: str, port: int | None) -> set[str]:
    """This server's own origins: the loopback names and the bound address, with its port."""
    hosts = {"127.0.0.1", "localhost", "[::1]"}
    bound = bound_host.lower()
    hosts.add(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
    return {f"http://{host}:{port}" for host in hosts}


def origin_allowed(origin: str | None, bound_host: str, port: int | None) -> bool:
    """A browser page must not drive our management mutations — not even one served from
    another port on this machine (R-FT-5): only this server's exact origin passes."""
    if origin is None:
        return True  # not a browser cross-site request
    try:
        parts = urlsplit(origin.strip().lower())
        origin_port = parts.port
    except ValueError:
        return False
    if parts.scheme != "http" or origin_port is None or parts.path not in ("", "/"):
        return False
    return f"http://{parts.netloc}" in own_origins(bound_host, port)


def make_host_guard(bound_host: str):
    # The verdict per Host value, judged once: a client sends the same one every time
    # (bounded: anything may arrive in the header).
    verdicts: dict[str | None, bool] = {}

    @web.middleware
    async def host_guard(request: web.Request, handler):
        host = request.headers.get("Host")
        allowed = verdicts.get(host)
        if allowed is None:
            if len(verdicts) >= 64:
                verdicts.clear()
            allowed = verdicts[host] = host_allowed(host, bound_host)
        if not allowed:
            err = GatewayError("forbidden", "Host header is not this server's address")
            return render_for(request.path)(err)
        if request.method in MUTATING and request.path.startswith(("/api/", "/llmux/")):
            port = request.app[SERVICE].port
            if not origin_allowed(request.headers.get("Origin"), bound_host, port):
                return render_for(request.path)(
                    GatewayError("forbidden", "cross-origin requests are not accepted")
                )
            if request.content_type != "application/json":
                # Every mutation, body or not: a form post from a page cannot set this type
                # without a CORS preflight we never answer (R-FT-5).
                return render_for(request.path)(
                    GatewayError(
                        "unsupported_media_type",
                        f"expected Content-Type application/json, got "
                        f"{request.content_type or 'none'}",
                    )
                )
        return await handler(request)

    return host_guard
