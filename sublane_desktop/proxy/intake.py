"""Everything a model request must pass before it reaches scheduling (no record for these).

R-PX-1 client-key auth, then content type, size and JSON shape. Each failure is a clear error
in the route's own shape and changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from sublane_desktop.proxy import SERVICE

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.store.repositories import KeyIdentity


def client_key(request: web.Request) -> str | None:
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    auth = request.headers.get("Authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


async def authenticate(request: web.Request) -> KeyIdentity:
    key = client_key(request)
    if not key:
        raise GatewayError("unauthorized", "missing SubLane client key (x-api-key or Bearer)")
    identity = await request.app[SERVICE].identify(key)
    if identity is None:
        raise GatewayError("unauthorized", "unknown or revoked SubLane client key")
    return identity


async def json_body(request: web.Request) -> tuple[dict[str, Any], bytes]:
    """The request's JSON object and its raw bytes (reused upstream when nothing changes)."""
    if request.content_type != "application/json":
        raise GatewayError(
            "unsupported_media_type",
            f"expected Content-Type application/json, got {request.content_type or 'none'}",
        )
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise GatewayError(
            "request_too_large",
            f"request body exceeds the {request.client_max_size} byte limit",
        ) from None
    if not raw.strip():
        raise GatewayError("invalid_request", "request body is empty")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise GatewayError("invalid_request", f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise GatewayError("invalid_request", "request body must be a JSON object")
    return body, raw
