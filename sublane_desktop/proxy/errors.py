"""Error bodies in each route family's own shape (SPEC §7)."""

from __future__ import annotations

from aiohttp import web

from sublane_desktop.core.errors import GatewayError, bounded_retry_after
from sublane_desktop.core.translate.anthropic import ANTHROPIC_ERROR_TYPES
from sublane_desktop.core.translate.errors import anthropic_type_for, openai_type_for


def anthropic_error(err: GatewayError, request_id: str | None = None) -> web.Response:
    body: dict = {
        "type": "error",
        "error": {"type": err.anthropic_type, "code": err.code, "message": err.message},
    }
    if request_id:
        body["request_id"] = request_id
    return web.json_response(body, status=err.status, headers=_headers(err, request_id))


def openai_error(err: GatewayError, request_id: str | None = None) -> web.Response:
    body = {
        "error": {
            "type": err.openai_type,
            "code": err.code,
            "message": err.message,
            "param": err.param,
        }
    }
    return web.json_response(body, status=err.status, headers=_headers(err, request_id))


def _headers(err: GatewayError, request_id: str | None) -> dict[str, str]:
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    if request_id:
        headers["X-Request-ID"] = request_id
    return headers


def render_for(path: str):
    """The error renderer for a request path: Anthropic for /v1/messages*, else OpenAI."""
    return anthropic_error if path.startswith("/v1/messages") else openai_error


def upstream_error(protocol: str, status: int, kind: str | None, message: str,
                   request_id: str, retry_after: float | None = None) -> web.Response:
    """An upstream's error answer retold in the client's protocol (translated routes)."""
    headers = {"X-Request-ID": request_id}
    if retry_after is not None:
        headers["Retry-After"] = str(bounded_retry_after(retry_after))
    if protocol == "anthropic":
        body: dict = {"type": "error", "error": {
            "type": kind if kind in ANTHROPIC_ERROR_TYPES else anthropic_type_for(status),
            "message": message}, "request_id": request_id}
    else:
        body = {"error": {"type": openai_type_for(status), "code": kind or f"http_{status}",
                          "message": message, "param": None}}
    return web.json_response(body, status=status, headers=headers)
