"""Error bodies in each route family's own shape (SPEC §7)."""

from __future__ import annotations

from aiohttp import web

from sublane_desktop.core.errors import GatewayError


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
