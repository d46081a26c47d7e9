"""Request history routes (SPEC §6, §7): personal and administrator views, and their filters.

Personal routes take the caller's client key (or the administrator token, meaning the
administrator user); the user they serve comes only from that credential, never from a query
parameter (R-REC-6). Errors use the OpenAI shape like the rest of the management API.
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.history import InvalidQuery, parse_query
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import client_key
from sublane_desktop.proxy.management import admin_route


async def _caller_user_id(request: web.Request, service: Any) -> int:
    key = client_key(request)
    if not key:
        raise GatewayError(
            "unauthorized", "a SubLane client key or the administrator token is required"
        )
    admin_token = service.admin_token
    if admin_token and hmac.compare_digest(key.encode(), admin_token.encode()):
        admin_id = await service.admin_user_id()
        if admin_id is not None:
            return admin_id
    identity = await service.identify(key)
    if identity is None:
        raise GatewayError("unauthorized", "unknown or revoked SubLane client key")
    return identity.user_id


def _query(request: web.Request, *, admin: bool):
    try:
        return parse_query(request.query.items(), admin=admin)
    except InvalidQuery as exc:
        raise GatewayError("invalid_request", exc.message, param=exc.param) from None


def personal_route(handler):
    async def wrapped(request: web.Request) -> web.StreamResponse:
        service = request.app[SERVICE]
        try:
            user_id = await _caller_user_id(request, service)
            return await handler(request, service, user_id)
        except GatewayError as err:
            return openai_error(err)

    return wrapped


@personal_route
async def my_requests(request: web.Request, service: Any, user_id: int) -> web.Response:
    query = _query(request, admin=False)
    return web.json_response(await service.request_page(query, owner=user_id))


@personal_route
async def my_filters(request: web.Request, service: Any, user_id: int) -> web.Response:
    return web.json_response(await service.request_filters(owner=user_id))


@admin_route
async def all_requests(request: web.Request, service: Any) -> web.Response:
    query = _query(request, admin=True)
    return web.json_response(await service.request_page(query, owner=None))


@personal_route
async def my_misses(request: web.Request, service: Any, user_id: int) -> web.Response:
    """Cache misses by cause over `from`/`until` (R-CF-2), the caller's own requests only."""
    query = _query(request, admin=False)
    return web.json_response(
        await service.request_misses(owner=user_id, since=query.since, until=query.until)
    )


@admin_route
async def all_misses(request: web.Request, service: Any) -> web.Response:
    query = _query(request, admin=True)
    return web.json_response(
        await service.request_misses(owner=None, since=query.since, until=query.until)
    )


@admin_route
async def all_filters(request: web.Request, service: Any) -> web.Response:
    return web.json_response(await service.request_filters(owner=None))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/me/requests", my_requests)
    app.router.add_get("/api/me/requests/filters", my_filters)
    app.router.add_get("/api/requests", all_requests)
    app.router.add_get("/api/requests/filters", all_filters)
    app.router.add_get("/api/me/requests/misses", my_misses)
    app.router.add_get("/api/requests/misses", all_misses)
