"""Management API (SPEC §7): administrator token, JSON-only mutations, OpenAI error shape."""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import client_key, json_body


def _require_admin(request: web.Request) -> None:
    token = client_key(request)
    service = request.app[SERVICE]
    expected = service.admin_token
    if expected is None and service.keyring_problem:
        raise GatewayError("auth_failed", "management API unavailable: " + service.keyring_problem)
    if not token or not expected or not hmac.compare_digest(token, expected):
        raise GatewayError("unauthorized", "administrator token required")


def admin_route(handler):
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            _require_admin(request)
            return await handler(request, request.app[SERVICE])
        except GatewayError as err:
            return openai_error(err)

    return wrapped


def _account_ref(request: web.Request, service: Any) -> Any:
    ref = request.match_info["id"]
    try:
        return service.pool.find(ref)
    except KeyError:
        raise GatewayError("not_found", f"unknown account {ref!r}") from None


def _body_account(service: Any, body: dict[str, Any]) -> Any:
    ref = body.get("account")
    if isinstance(ref, bool) or not isinstance(ref, (str, int)) or ref == "":
        raise GatewayError("invalid_request", '"account" (id or name) is required', param="account")
    try:
        return service.pool.find(ref)
    except KeyError:
        raise GatewayError("not_found", f"unknown account {ref!r}") from None


@admin_route
async def runtime(request: web.Request, service: Any) -> web.Response:
    await service.refresh_catalog()  # accounts the CLI added meanwhile show up at once
    await service.credentials.sweep()  # and credentials gone from the keyring (R-LOGIN-4)
    return web.json_response(service.accounts_runtime())


@admin_route
async def set_limits(request: web.Request, service: Any) -> web.Response:
    body, _ = await json_body(request)
    account = _account_ref(request, service)
    limit = body.get("max_concurrency")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 8:
        raise GatewayError(
            "invalid_request",
            "max_concurrency must be an integer from 1 to 8",
            param="max_concurrency",
        )
    await service.set_limit(account.id, limit)
    return web.json_response(service.account_view(account.id))


@admin_route
async def resume(request: web.Request, service: Any) -> web.Response:
    account = _account_ref(request, service)
    await service.resume(account.id)
    return web.json_response(service.account_view(account.id))


@admin_route
async def disable(request: web.Request, service: Any) -> web.Response:
    account = _account_ref(request, service)
    return web.json_response(await service.disable(account.id))


@admin_route
async def enable(request: web.Request, service: Any) -> web.Response:
    account = _account_ref(request, service)
    return web.json_response(await service.enable(account.id))


@admin_route
async def verify(request: web.Request, service: Any) -> web.Response:
    account = _account_ref(request, service)
    return web.json_response(await service.verify(account.id))


@admin_route
async def signed_in(request: web.Request, service: Any) -> web.Response:
    """After `sublane account login` stored a credential: take it up, verify it and read the
    quota at once, so the live pool shows real gauges (R-LOGIN-1)."""
    from sublane_desktop.accounts.signin import settle

    await json_body(request)  # a mutation like any other: JSON only (R-FT-5)
    await service.refresh_catalog()
    account = _account_ref(request, service)
    return web.json_response(await settle(service, account.id))


@admin_route
async def pause_account(request: web.Request, service: Any) -> web.Response:
    body, _ = await json_body(request)
    account = _body_account(service, body)
    paused = body.get("paused", True)
    if not isinstance(paused, bool):
        raise GatewayError("invalid_request", '"paused" must be true or false', param="paused")
    await service.pause(account.id, paused)
    return web.json_response(service.account_view(account.id))


@admin_route
async def switch(request: web.Request, service: Any) -> web.Response:
    body, _ = await json_body(request)
    account = _body_account(service, body)
    return web.json_response(await service.switch(account.id))


@admin_route
async def reset_usage(request: web.Request, service: Any) -> web.Response:
    await service.reset_usage()
    return web.json_response(service.accounts_runtime())


@admin_route
async def refresh_quotas(request: web.Request, service: Any) -> web.Response:
    return web.json_response({"started": service.refresh_quotas()})


@admin_route
async def revoke_key(request: web.Request, service: Any) -> web.Response:
    """The CLI's `key revoke` while a server runs: this server stops honouring the key before
    the call returns, which a database write from another process cannot promise (R-FT-12)."""
    await json_body(request)  # a mutation like any other: JSON only (R-FT-5)
    ref = request.match_info["id"]
    try:
        return web.json_response(await service.revoke_key(ref))
    except LookupError:  # the store's NotFound: no key has this id or name
        raise GatewayError("not_found", f"unknown key {ref!r}") from None


@admin_route
async def get_settings(request: web.Request, service: Any) -> web.Response:
    return web.json_response(service.settings)


@admin_route
async def patch_settings(request: web.Request, service: Any) -> web.Response:
    body, _ = await json_body(request)
    try:
        return web.json_response(await service.update_settings(body))
    except ValueError as exc:
        raise GatewayError("invalid_request", str(exc)) from None


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/accounts/runtime", runtime)
    app.router.add_patch("/api/accounts/{id}/limits", set_limits)
    app.router.add_post("/api/accounts/{id}/resume", resume)
    app.router.add_post("/api/accounts/{id}/disable", disable)
    app.router.add_post("/api/accounts/{id}/enable", enable)
    app.router.add_post("/api/accounts/{id}/verify", verify)
    app.router.add_post("/api/accounts/{id}/signed-in", signed_in)
    app.router.add_post("/llmux/pause-account", pause_account)
    app.router.add_post("/llmux/switch", switch)
    app.router.add_post("/llmux/reset-usage", reset_usage)
    app.router.add_post("/api/accounts/refresh-quotas", refresh_quotas)
    app.router.add_post("/api/keys/{id}/revoke", revoke_key)
    app.router.add_get("/api/settings", get_settings)
    app.router.add_patch("/api/settings", patch_settings)
