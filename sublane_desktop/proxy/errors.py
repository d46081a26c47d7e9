"""Error bodies in each route family's own shape (SPEC §7), and the one middleware that gives
every route that shape for anything unexpected (R-FT-3).

The renderers here are the only places an error response is built; every 429 and 503 they
build carries the one bounded `Retry-After` of core.errors (R-FT-4).
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any

from aiohttp import web

from sublane_desktop.core.errors import WAIT_STATUSES, GatewayError, bounded_retry_after
from sublane_desktop.core.ids import new_request_id
from sublane_desktop.core.records import sanitize_code
from sublane_desktop.core.translate.anthropic import ANTHROPIC_ERROR_TYPES
from sublane_desktop.core.translate.errors import anthropic_type_for, openai_type_for

log = logging.getLogger(__name__)

# Set on a request once its response has started (headers sent): an error after that point
# can no longer become an error response, only a dropped connection.
STARTED: web.RequestKey[bool] = web.RequestKey("response_started", bool)
# HTTP errors aiohttp raises itself (unknown path, wrong method, …) and their stable codes.
_HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
}


def anthropic_error(err: GatewayError, request_id: str | None = None) -> web.Response:
    request_id = request_id or new_request_id()  # every answer can be quoted (R-FT-3)
    body: dict[str, Any] = {
        "type": "error",
        "error": {"type": err.anthropic_type, "code": err.code, "message": err.message},
    }
    if request_id:
        body["request_id"] = request_id
    return web.json_response(body, status=err.status, headers=_headers(err, request_id))


def openai_error(err: GatewayError, request_id: str | None = None) -> web.Response:
    request_id = request_id or new_request_id()  # every answer can be quoted (R-FT-3)
    body: dict[str, Any] = {
        "error": {
            "type": err.openai_type,
            "code": err.code,
            "message": err.message,
            "param": err.param,
        }
    }
    if request_id:
        body["request_id"] = request_id
    return web.json_response(body, status=err.status, headers=_headers(err, request_id))


def _headers(err: GatewayError, request_id: str | None) -> dict[str, str]:
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)  # bounded by GatewayError already
    if request_id:
        headers["X-Request-ID"] = request_id
    return headers


def render_for(path: str):
    """The error renderer for a request path: Anthropic for /v1/messages*, else OpenAI."""
    return anthropic_error if path.startswith("/v1/messages") else openai_error


def upstream_error(
    protocol: str,
    status: int,
    kind: str | None,
    message: str,
    request_id: str,
    wait: float | None = None,
) -> web.Response:
    """An upstream's error answer retold in the client's protocol (translated routes).

    `wait` is the attempt's Retry-After for a 429/503; `kind` has been through sanitize_code.
    """
    headers = {"X-Request-ID": request_id}
    if status in WAIT_STATUSES:
        headers["Retry-After"] = str(bounded_retry_after(wait))
    if protocol == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {
                "type": kind if kind in ANTHROPIC_ERROR_TYPES else anthropic_type_for(status),
                "message": message,
            },
            "request_id": request_id,
        }
    else:
        body = {
            "error": {
                "type": openai_type_for(status),
                "code": sanitize_code(kind, f"http_{status}") if kind else f"http_{status}",
                "message": message,
                "param": None,
            },
            "request_id": request_id,
        }
    return web.json_response(body, status=status, headers=headers)


# --- the one error middleware (R-FT-3) ------------------------------------------------------------


_REQUEST_ID_TAG = "sublane_request_id"  # an attribute on the exception, read by the middleware


def tag_request_id(exc: BaseException, request_id: str) -> None:
    """Let the middleware answer an unexpected error with the attempt's own request id."""
    try:
        setattr(exc, _REQUEST_ID_TAG, request_id)
    except AttributeError:  # an exception type without a __dict__; a fresh id will do
        pass


def where(exc: BaseException) -> str:
    """Where an exception happened, as file:line function frames — never its message or any
    value, which may hold a client's text or a credential (no secrets in logs)."""
    frames = traceback.extract_tb(exc.__traceback__)[-6:]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))


async def mark_started(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: from here on an error can no longer be an error response."""
    request[STARTED] = True


@web.middleware
async def error_shape(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or request.get(STARTED):
            raise
        code = _HTTP_CODES.get(exc.status, "invalid_request")
        err = GatewayError(code, exc.reason or "request refused", status=exc.status)
        return render_for(request.path)(err, new_request_id())
    except Exception as exc:  # the one place that answers anything unexpected
        request_id = getattr(exc, _REQUEST_ID_TAG, None) or new_request_id()
        log.error(
            "internal error on %s %s (request %s): %s at %s",
            request.method,
            request.path,
            request_id,
            type(exc).__name__,
            where(exc),
        )
        if request.get(STARTED):
            # Half an answer is out; all that is left is to end the connection quietly
            # (aiohttp takes a ConnectionError while finishing as "client gone").
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        err = GatewayError(
            "internal_error", f"internal error; quote request id {request_id} when reporting it"
        )
        return render_for(request.path)(err, request_id)
