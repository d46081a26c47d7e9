"""Everything a model request must pass before it reaches scheduling (no record for these).

R-PX-1 client-key auth, then content type, size and JSON shape. Each failure is a clear error
in the route's own shape and changes nothing.

Where client strings are cleaned (R-FT-2): the one string of a request body that a record
keeps, the model name, must be text SQLite and UTF-8 can hold — a lone surrogate or a control
character such as NUL is a 400 here. Everything else a record holds is made by the server, and
the record writer cleans every string once more, so nothing a client sends costs a record.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
from aiohttp import web

from sublane_desktop.core import json_text
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.ids import KeyIdentity
from sublane_desktop.core.records import clean_text
from sublane_desktop.proxy import SERVICE


def client_key(request: web.Request) -> str | None:
    """The key a client presents. Keys and the administrator token are ASCII; a header value
    that is not (non-UTF-8 bytes arrive as lone surrogates) presents no key at all."""
    key = request.headers.get("x-api-key")
    if not key:
        auth = request.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        key = token if scheme.lower() == "bearer" else None
    key = key.strip() if key else None
    return key if key and key.isascii() else None


async def authenticate(request: web.Request) -> KeyIdentity:
    key = client_key(request)
    if not key:
        raise GatewayError("unauthorized", "missing SubLane client key (x-api-key or Bearer)")
    service = request.app[SERVICE]
    identity = service.known_identity(key) or await service.identify(key)
    if identity is None:
        raise GatewayError("unauthorized", "unknown or revoked SubLane client key")
    return identity


def media_type(message: web.Request | aiohttp.ClientResponse) -> str:
    """A request's or response's media type. The usual exact `application/json` is answered
    without aiohttp's full parse of the header (per request, it showed in profiles)."""
    raw = message.headers.get("Content-Type")
    return raw if raw == "application/json" else message.content_type


async def json_body(request: web.Request) -> tuple[dict[str, Any], bytes]:
    """The request's JSON object and its raw bytes (reused upstream when nothing changes)."""
    if media_type(request) != "application/json":
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
    return parse_json_object(raw, "request body"), raw


MAX_DEPTH = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # control characters, DEL included


def parse_json_object(raw: bytes | str, what: str = "message") -> dict[str, Any]:
    """A client's JSON object (request body or WebSocket message), or GatewayError 400.

    Nesting deeper than MAX_DEPTH is refused (R-FT-3): no real request needs it, and deep
    enough nesting would otherwise end in a RecursionError somewhere down the line.
    """
    try:
        body = json_text.load(raw) if isinstance(raw, bytes) else json.loads(raw)
    except RecursionError:
        body = None  # deeper than the parser goes: certainly deeper than MAX_DEPTH
    except (ValueError, UnicodeDecodeError) as exc:
        reason = str(exc)[:120].encode("ascii", "backslashreplace").decode()
        raise GatewayError("invalid_request", f"{what} is not valid JSON: {reason}") from None
    if body is None or _deeper_than(body, MAX_DEPTH, raw):
        raise GatewayError("invalid_request", f"{what} is nested deeper than {MAX_DEPTH} levels")
    if not isinstance(body, dict):
        raise GatewayError("invalid_request", f"{what} must be a JSON object")
    model = body.get("model")
    if (
        isinstance(model, str)
        # printable ASCII (every real model name) has neither; only other text is searched
        and not (model.isascii() and model.isprintable())
        and (clean_text(model) != model or _CONTROL.search(model))
    ):
        raise GatewayError(
            "invalid_request",
            "model must be printable text (no control characters or unpaired surrogates)",
            param="model",
        )
    return body


def _deeper_than(value: Any, limit: int, raw: bytes | str) -> bool:
    if isinstance(raw, bytes):
        opens = raw.count(b"[") + raw.count(b"{")
    else:
        opens = raw.count("[") + raw.count("{")
    if opens <= limit:  # cheap: not enough brackets in the whole text to go that deep
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False
