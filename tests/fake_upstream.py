"""A fake Anthropic upstream: a real aiohttp server on loopback speaking PROTOCOLS.md.

Tests script what each request gets (per access token, or for everyone) and read back what the
upstream saw: headers (as sent: names, case, order), body bytes, and how many requests each
token had in flight at once.

It refuses what the real API refuses (SPEC R-WF-7; docs/upstreams.md lists each rule and its
source): a Bearer (OAuth) token without the `oauth-2025-04-20` beta, and any Bearer token on
`GET /v1/models`, get 401 "OAuth authentication is currently not supported."; a request without
`anthropic-version` or with a body that is not JSON gets 400; a refresh token is spent by its
first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import zlib
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fake_authorize import (
    AuthorizationServer,
    Grant,
    Words,
    loopback,
    paste_back_page,
)


@dataclass
class Reply:
    """One scripted answer. kind: json | sse | error | drop | midstream_error, or a fault:
    hang (accepts the request, never sends headers), stall (streams the first delta, then
    silence), json_stall (headers and half a JSON body, then silence), mute (headers, then
    not one byte of body: SSE when the request asked to stream, else JSON), json_drop (headers
    and half a JSON body, then the connection closed)."""

    kind: str = "auto"  # auto: sse when the request asked to stream, else json
    status: int = 200
    text: str = "Hello from the fake upstream."
    error_type: str = "api_error"
    message: str = "scripted"  # an error answer's message
    retry_after: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_first: float = 0.0  # seconds before the first text delta
    delay_between: float = 0.0
    events: int = 3  # number of text deltas
    usage: dict[str, int] = field(
        default_factory=lambda: {
            "input_tokens": 12,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 8,
            "output_tokens": 7,
        }
    )
    gate: asyncio.Event | None = None  # the stream waits on this before finishing
    # Content blocks instead of the one text block: text, thinking (with signature), tool_use.
    blocks: list[dict[str, Any]] | None = None
    # "gzip": the answer (JSON or SSE) is gzip-compressed, as the real API's edge does for a
    # client that offers gzip in Accept-Encoding; a client that does not gets it plain.
    encoding: str | None = None


@dataclass
class Seen:
    token: str
    path: str
    query: str
    headers: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"
    raw: bytes = b""  # the body bytes as they arrived
    raw_headers: list[tuple[str, str]] = field(default_factory=list)  # as sent: case, order


OAUTH_BETA = "oauth-2025-04-20"
# The real API's words (PROTOCOLS.md "Anthropic"; docs/upstreams.md).
OAUTH_NOT_SUPPORTED = "OAuth authentication is currently not supported."
REFRESH_REFUSED = {
    "error": "invalid_grant",
    "error_description": "Refresh token not found or invalid",
}
CLAUDE_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
# The authorization-code exchange's refusals (R-LOGIN-1). Claude Code 2.1.197 reads a 401 as
# "Invalid authorization code"; no public thread quotes the body, so the words are the fake's
# own, in the OAuth shape of the refresh refusal above.
SIGNIN_WORDS = Words(
    bad_code=(401, {"error": "invalid_grant", "error_description": "Invalid 'code' in request."}),
    bad_verifier=(
        401,
        {"error": "invalid_grant", "error_description": "Invalid 'code_verifier' in request."},
    ),
    bad_redirect=(
        400,
        {"error": "invalid_grant", "error_description": "Invalid 'redirect_uri' in request."},
    ),
    bad_client=(
        400,
        {"error": "invalid_client", "error_description": "Invalid 'client_id' in request."},
    ),
    bad_state=(400, {"error": "invalid_grant", "error_description": "Invalid 'state' in request."}),
)


def api_error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response(
        {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_upstream_refused",
        },
        status=status,
        headers={"request-id": "req_upstream_refused"},  # the real API sends it on every answer
    )


def is_bearer(request: web.Request) -> bool:
    return request.headers.get("Authorization", "").lower().startswith("bearer ")


def betas_of(request: web.Request) -> list[str]:
    return [
        part.strip()
        for value in request.headers.getall("anthropic-beta", [])
        for part in value.split(",")
        if part.strip()
    ]


def refusal(request: web.Request) -> web.Response | None:
    """What the real Messages API says before it reads a request, or None when it would read it.
    An OAuth (Bearer) token is accepted only with the oauth beta; the version header is
    required."""
    if is_bearer(request) and OAUTH_BETA not in betas_of(request):
        return api_error(401, "authentication_error", OAUTH_NOT_SUPPORTED)
    if not request.headers.get("anthropic-version"):
        return api_error(400, "invalid_request_error", "anthropic-version: header is required")
    return None


def parsed(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


# Anthropic's words for an OAuth token used by any client but Claude Code (PROTOCOLS.md).
CLAUDE_CODE_ONLY = (
    "This credential is only authorized for use with Claude Code and cannot be used for other"
    " API requests."
)
# What Claude Code 2.1.197 sends to identify itself (captured from the real CLI; the Agent SDK
# sends the same user agent with `sdk-cli` or `sdk-py` in the parentheses).
CLAUDE_CODE_HEADERS = {"User-Agent": "claude-cli/2.1.197 (external, cli)", "x-app": "cli"}


def token_of(request: web.Request) -> str:
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:]
    return request.headers.get("x-api-key", "")


class FakeAnthropic:
    def __init__(self) -> None:
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.default = Reply()
        self.seen: list[Seen] = []
        self.in_flight: dict[str, int] = defaultdict(int)
        self.max_in_flight: dict[str, int] = defaultdict(int)
        self.cancelled = 0
        self.client_refusals = 0  # OAuth requests refused as not from Claude Code
        self.started = asyncio.Event()
        # quota feeds: headers added to every reply for a token, and /api/oauth/usage answers
        self.headers_for: dict[str, dict[str, str]] = defaultdict(dict)
        self.usage_for: dict[str, Any] = {}
        self.usage_reads: list[str] = []
        self.usage_seen = asyncio.Condition()  # notified at each read (`usage_read_by`)
        self.usage_in_flight = 0
        self.usage_max_in_flight = 0
        self.usage_gate: asyncio.Event | None = None
        # OAuth: refresh_token -> (new access token, new refresh token), or a status to refuse
        self.refresh_grants: dict[str, tuple[str, str] | int] = {}
        self.refresh_calls: list[dict[str, Any]] = []
        # refresh tokens already exchanged: the real endpoint rotates them, a reuse is refused
        self.spent_refresh: set[str] = set()
        # access tokens the upstream treats as expired (401 "OAuth token has expired")
        self.expired: set[str] = set()
        # GET /v1/models: the ids it lists, or a status to answer with; who asked
        self.model_ids: list[str] | int = [
            "claude-opus-4-5",
            "claude-sonnet-4-5",
            "claude-fable-5",
            "claude-brand-new-6",
        ]
        self.models_reads: list[str] = []
        # every request that reached the server at all: (method, path with query)
        self.requests: list[tuple[str, str]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""
        # Browser sign-in (R-LOGIN-1): claude.ai's authorize page and the code exchange. The
        # redirect is Claude Code's loopback `http://localhost:<any port>/callback` or the
        # paste-back page (`/oauth/code/callback` on this host, as on platform.claude.com).
        self.signins = 0
        self.oauth = AuthorizationServer(
            client_id=CLAUDE_CLIENT_ID,
            redirect_ok=lambda uri: (
                loopback("/callback")(uri) or uri == self.url + "/oauth/code/callback"
            ),
            words=SIGNIN_WORDS,
            issue=self._issue_signin,
            prefix="claude-code",
        )

    def script(self, token: str | None, *replies: Reply) -> None:
        self.scripts[token or "*"].extend(replies)

    def _next(self, token: str) -> Reply:
        for key in (token, "*"):
            if self.scripts[key]:
                return self.scripts[key].popleft()
        return self.default

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._log_request])
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_post("/v1/messages/count_tokens", self.count_tokens)
        app.router.add_get("/api/oauth/usage", self.usage)
        app.router.add_post("/v1/oauth/token", self.oauth_token)
        app.router.add_get("/oauth/authorize", self.oauth.authorize)
        app.router.add_get("/oauth/code/callback", paste_back_page)
        app.router.add_get("/v1/models", self.models)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _log_request(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        return await handler(request)

    def tokens_served(self) -> list[str]:
        return [s.token for s in self.seen]

    async def usage_read_by(self, token: str) -> None:
        """Returns once the usage endpoint was asked with `token`: a test waits for a read the
        server starts in the background, without sleeping."""
        async with self.usage_seen:
            await self.usage_seen.wait_for(lambda: token in self.usage_reads)

    async def usage(self, request: web.Request) -> web.Response:
        token = token_of(request)
        self.usage_reads.append(token)
        async with self.usage_seen:
            self.usage_seen.notify_all()
        if is_bearer(request) and OAUTH_BETA not in betas_of(request):
            return api_error(401, "authentication_error", OAUTH_NOT_SUPPORTED)
        if token in self.expired:
            return api_error(401, "authentication_error", "OAuth token has expired.")
        self.usage_in_flight += 1
        self.usage_max_in_flight = max(self.usage_max_in_flight, self.usage_in_flight)
        try:
            if self.usage_gate is not None:
                await self.usage_gate.wait()
            answer = self.usage_for.get(token, self.usage_for.get("*"))
            if isinstance(answer, int):
                return web.json_response(
                    {"error": "rate limited"}, status=answer, headers={"retry-after": "3600"}
                )
            if answer is None:
                return web.json_response({"five_hour": None, "seven_day": None})
            return web.json_response(answer)
        finally:
            self.usage_in_flight -= 1

    async def models(self, request: web.Request) -> web.Response:
        token = token_of(request)
        self.models_reads.append(token)
        if is_bearer(request):  # the model list takes API keys only, whatever the betas
            return api_error(401, "authentication_error", OAUTH_NOT_SUPPORTED)
        if token in self.expired:
            return web.json_response(
                {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                },
                status=401,
            )
        if isinstance(self.model_ids, int):
            return web.json_response(
                {"type": "error", "error": {"type": "api_error", "message": "scripted"}},
                status=self.model_ids,
            )
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
            for m in self.model_ids
        ]
        return web.json_response(
            {
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            }
        )

    def _issue_signin(self, grant: Grant) -> dict[str, Any]:
        self.signins += 1
        n = self.signins
        return {
            "access_token": f"sk-ant-oat01-signin-{n}",
            "refresh_token": f"sk-ant-ort01-signin-{n}",
            "expires_in": 28800,
            "token_type": "Bearer",
            "scope": grant.scope,
            "account": {"uuid": f"acct-{n}", "email_address": f"person{n}@example.com"},
            "organization": {"uuid": f"org-{n}", "name": "Example"},
        }

    async def oauth_token(self, request: web.Request) -> web.Response:
        body = parsed(await request.read())
        if body is None:  # the endpoint takes JSON only (Wei-Shaw/sub2api issue 3424)
            return api_error(400, "invalid_request_error", "Invalid request format")
        if body.get("grant_type") == "authorization_code":
            status, answer = self.oauth.exchange({k: str(v) for k, v in body.items()})
            return web.json_response(answer, status=status)
        self.refresh_calls.append(body)
        token = body.get("refresh_token")
        grant = self.refresh_grants.get(token)
        if token in self.spent_refresh:
            return web.json_response(REFRESH_REFUSED, status=400)
        if grant is None or isinstance(grant, int):
            return web.json_response(REFRESH_REFUSED, status=grant or 400)
        self.spent_refresh.add(token)
        access, refresh = grant
        return web.json_response(
            {
                "access_token": access,
                "refresh_token": refresh,
                "expires_in": 28800,
                "token_type": "Bearer",
            }
        )

    async def _take(
        self, request: web.Request
    ) -> tuple[dict[str, Any] | None, web.Response | None]:
        """Record what arrived; the body, or the real API's refusal of the request."""
        raw = await request.read()
        body = parsed(raw)
        self.seen.append(
            Seen(
                token_of(request),
                request.path,
                request.query_string,
                dict(request.headers),
                body if body is not None else {},
                request.method,
                raw,
                [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers],
            )
        )
        refused = refusal(request)
        if refused is None and body is None:
            refused = api_error(400, "invalid_request_error", "The request body is not valid JSON.")
        return body, refused or self.refuse_client(request)

    async def count_tokens(self, request: web.Request) -> web.Response:
        _body, refused = await self._take(request)
        return refused or web.json_response({"input_tokens": 42})

    def refuse_client(self, request: web.Request) -> web.Response | None:
        """A subscription (OAuth) token serves Claude Code only (PROTOCOLS.md; the refs
        disguise other callers as Claude Code to pass this): any other client gets Anthropic's
        400. Claude Code is told by its user agent and `x-app` header, as SubLane tells it."""
        if not is_bearer(request):
            return None  # an API key serves any client
        agent = request.headers.get("User-Agent", "")
        if agent.startswith("claude-cli/") and request.headers.get("x-app") == "cli":
            return None
        self.client_refusals += 1
        return api_error(400, "invalid_request_error", CLAUDE_CODE_ONLY)

    async def messages(self, request: web.Request) -> web.StreamResponse:
        token = token_of(request)
        body, refused = await self._take(request)
        if refused is not None or body is None:
            return refused or api_error(400, "invalid_request_error", "no body")
        if token in self.expired:
            return web.json_response(
                {
                    "type": "error",
                    "error": {
                        "type": "authentication_error",
                        "message": "OAuth token has expired. Please obtain a new token.",
                    },
                },
                status=401,
            )
        reply = self._next(token)
        extra = dict(self.headers_for.get(token, {}))
        self.in_flight[token] += 1
        self.max_in_flight[token] = max(self.max_in_flight[token], self.in_flight[token])
        self.started.set()
        try:
            return await self._answer(request, body, reply, extra)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight[token] -= 1

    async def _answer(
        self, request: web.Request, body: dict[str, Any], reply: Reply, extra: dict[str, str]
    ) -> web.StreamResponse:
        headers = {"request-id": "req_upstream_1", **extra, **reply.headers}
        if reply.retry_after is not None:
            headers["retry-after"] = reply.retry_after
        kind = reply.kind
        if kind == "auto":
            kind = "sse" if body.get("stream") else "json"
        if kind == "hang":
            await asyncio.Future()  # until the proxy gives up and disconnects
        if kind == "mute":
            ctype = "text/event-stream" if body.get("stream") else "application/json"
            response = web.StreamResponse(headers={"content-type": ctype, **headers})
            await response.prepare(request)
            await asyncio.Future()
        if kind in ("json_stall", "json_drop"):
            response = web.StreamResponse(headers={"content-type": "application/json", **headers})
            await response.prepare(request)
            await response.write(b'{"id": "msg_fake", "type": "mess')
            if kind == "json_drop":
                request.transport.close()
                return response
            await asyncio.Future()
        if reply.status != 200 or kind == "error":
            status = reply.status if reply.status != 200 else 500
            return web.json_response(
                {
                    "type": "error",
                    "error": {"type": reply.error_type, "message": reply.message},
                    "request_id": "req_upstream_1",
                },
                status=status,
                headers=headers,
            )
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": reply.usage,
        }
        if reply.blocks is not None:
            message["content"] = reply.blocks
            if any(b.get("type") == "tool_use" for b in reply.blocks):
                message["stop_reason"] = "tool_use"
        gzipped = reply.encoding == "gzip" and "gzip" in request.headers.get("Accept-Encoding", "")
        if gzipped:
            headers["content-encoding"] = "gzip"
        if kind == "json":
            if reply.delay_first:
                await asyncio.sleep(reply.delay_first)
            data = json.dumps(message).encode()
            return web.Response(
                body=gzip.compress(data) if gzipped else data,
                content_type="application/json",
                headers=headers,
            )
        response: Any = web.StreamResponse(headers={"content-type": "text/event-stream", **headers})
        await response.prepare(request)
        if gzipped:
            response = GzipStream(response)
        if kind == "drop":
            await response.write(
                _event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            **message,
                            "content": [],
                            "usage": {**reply.usage, "output_tokens": 1},
                        },
                    },
                )
            )
            request.transport.close()
            return response.response if gzipped else response
        if reply.blocks is not None:
            await _stream_blocks(response, message, reply)
        else:
            await self._stream(response, message, reply, kind)
        if gzipped:
            await response.finish()
            return response.response
        return response

    async def _stream(
        self, response: web.StreamResponse, message: dict[str, Any], reply: Reply, kind: str
    ) -> None:
        start_usage = {**reply.usage, "output_tokens": 1}
        await response.write(
            _event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "usage": start_usage,
                    },
                },
            )
        )
        await response.write(
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        await response.write(_event("ping", {"type": "ping"}))
        if reply.delay_first:
            await asyncio.sleep(reply.delay_first)
        pieces = _split(reply.text, reply.events)
        for i, piece in enumerate(pieces):
            if i and reply.delay_between:
                await asyncio.sleep(reply.delay_between)
            await response.write(
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
            if kind == "stall" and i == 0:
                await asyncio.Future()  # silence mid-stream, connection open
            if kind == "midstream_error" and i == 0:
                await response.write(
                    _event(
                        "error",
                        {
                            "type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded"},
                        },
                    )
                )
                return
        if reply.gate is not None:
            await reply.gate.wait()
        await response.write(
            _event("content_block_stop", {"type": "content_block_stop", "index": 0})
        )
        await response.write(
            _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": reply.usage.get("output_tokens", 0)},
                },
            )
        )
        await response.write(_event("message_stop", {"type": "message_stop"}))


async def _stream_blocks(
    response: web.StreamResponse, message: dict[str, Any], reply: Reply
) -> None:
    """A scripted answer of several content blocks, streamed the way the API streams them."""
    await response.write(
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**reply.usage, "output_tokens": 1},
                },
            },
        )
    )
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        start = {
            "text": {"type": "text", "text": ""},
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {
                "type": "tool_use",
                "id": block.get("id"),
                "name": block.get("name"),
                "input": {},
            },
        }[kind]
        await response.write(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        if kind == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _split(block["text"], 2)]
        elif kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _split(block["thinking"], 2)
            ]
            deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _split(json.dumps(block.get("input", {})), 3)
            ]
        for delta in deltas:
            await response.write(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        await response.write(
            _event("content_block_stop", {"type": "content_block_stop", "index": index})
        )
    await response.write(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": reply.usage.get("output_tokens", 0)},
            },
        )
    )
    await response.write(_event("message_stop", {"type": "message_stop"}))


class GzipStream:
    """An SSE answer gzip-compressed as it goes: each event is flushed as it is written, so
    the reader sees it at once (as a compressing edge does for an event stream)."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        self.packer = zlib.compressobj(wbits=31)  # 31: the gzip container

    async def write(self, data: bytes) -> None:
        await self.response.write(self.packer.compress(data) + self.packer.flush(zlib.Z_SYNC_FLUSH))

    async def finish(self) -> None:
        await self.response.write(self.packer.flush())


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def _split(text: str, parts: int) -> list[str]:
    parts = max(1, parts)
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@contextlib.contextmanager
def never_accepting_url() -> Iterator[str]:
    """An upstream URL whose port takes no new connection: its accept queue is full, so
    connecting hangs until the caller's connect limit ends it."""
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(0)
    port = blackhole.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        filler.close()
        blackhole.close()
