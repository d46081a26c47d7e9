"""OpenAI Responses: POST /v1/responses (JSON and SSE), GET /v1/responses (WebSocket) and
POST /v1/responses/compact.

Codex models are relayed to a Codex account in the Responses protocol itself; Claude models are
translated to Anthropic Messages and back (R-PX-6).

The WebSocket side talks to clients the way the Responses WebSocket does (a `response.create`
message per turn, every event back as a JSON text message), but each turn goes upstream as an
ordinary streaming HTTP POST. The upstream WebSocket is undocumented and changes between Codex
versions, while the HTTP stream carries the same events; Codex itself falls back to HTTP only on
a 426. Because the upstream request is stateless, the socket keeps what the upstream socket
would: the last response's full input and output, so a turn that sends only new items with
`previous_response_id` (as Codex does on a reused socket) is expanded before it goes up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any

import aiohttp
from aiohttp import web

from sublane_desktop.core.affinity import conversation_digest, conversation_key
from sublane_desktop.core.errors import WAIT_STATUSES, GatewayError
from sublane_desktop.core.records import sanitize_code
from sublane_desktop.core.routing import ModelRoute, route_model
from sublane_desktop.core.tasks import spawn
from sublane_desktop.core.translate import responses as rs
from sublane_desktop.core.translate.errors import openai_type_for
from sublane_desktop.core.translate.events import ANTHROPIC_TAG, GEMINI_TAG, Tally, Transcript
from sublane_desktop.core.translate.prompt import TranslationError
from sublane_desktop.providers import codex
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error, upstream_error, where
from sublane_desktop.proxy.intake import authenticate, json_body, parse_json_object
from sublane_desktop.proxy.relay import (
    Attempt,
    ClientGone,
    Fold,
    Frame,
    PassThrough,
    StallGuard,
    codex_builder,
    named_frame,
    passback_headers,
    serve,
    start_stream,
)
from sublane_desktop.proxy.translated import (
    refuse_unservable,
    relay_translated,
    translated_call,
    upstream_body,
)

log = logging.getLogger(__name__)

# A conversation that was on a Claude or Gemini model before carries their signature tags.
_ANTHROPIC_TAG_BYTES = ANTHROPIC_TAG.encode()
_GEMINI_TAG_BYTES = GEMINI_TAG.encode()

# Events that carry the gateway's request id on a socket (R-PX-7).
STAMPED = frozenset(
    {"response.created", "response.completed", "response.incomplete", "response.failed"}
)


def responses_fail_frame(message: str, code: str = "upstream_error") -> bytes:
    return named_frame({"type": "error", "code": code, "message": message, "param": None})


def _route_or_error(body: dict[str, Any]) -> ModelRoute:
    model = body.get("model")
    if model is None or model == "":
        raise GatewayError("invalid_request", "the request needs a model", param="model")
    route = route_model(model)
    if route is None:
        raise GatewayError("unknown_model", f"unknown model {str(model)[:80]!r}", param="model")
    refuse_unservable(route)
    return route


def _translated_body(
    body: dict[str, Any], route: ModelRoute, key: str | None
) -> tuple[Any, dict[str, Any]]:
    """(prompt, Anthropic body) for a Responses request to a Claude model."""
    try:
        prompt = rs.prompt_from_responses(body, route.upstream_model)
        if prompt.cache_key is None and key:
            prompt.cache_key = conversation_digest(key, route.provider)
        return prompt, upstream_body(prompt, route.provider)
    except TranslationError as exc:
        raise GatewayError("invalid_request", str(exc)) from None


class ResponsesRoute:
    """POST /v1/responses."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        service = request.app[SERVICE]
        try:
            identity = await authenticate(request)
            body, raw = await json_body(request)
            route = _route_or_error(body)
            key = conversation_key(request.headers, body)
            sent: bytes | None = raw  # the client's bytes, while the body is as it sent it
            if route.provider != "codex":
                prompt, upstream = _translated_body(body, route, key)
            elif raw.find(_ANTHROPIC_TAG_BYTES) >= 0 or raw.find(_GEMINI_TAG_BYTES) >= 0:
                # a conversation that was on a Claude or Gemini model
                stripped = rs.strip_foreign_reasoning(body)
                if stripped is not None:
                    body, sent = stripped, None
        except GatewayError as err:
            return openai_error(err)
        attempt = Attempt(
            service,
            identity,
            route,
            protocol="openai-responses",
            operation="responses",
            transport=request.transport,
            body=body,
        )
        if route.provider != "codex":
            return await serve(
                attempt,
                key,
                lambda a: relay_translated(
                    request, a, prompt, upstream, "responses", str(body["model"])
                ),
                openai_error,
            )
        return await serve(
            attempt, key, lambda a: self._native(request, a, body, sent), openai_error
        )

    async def _native(
        self, request: web.Request, attempt: Attempt, body: dict[str, Any], raw: bytes | None
    ) -> web.StreamResponse:
        upstream = await attempt.open(
            codex_builder(
                attempt.service,
                attempt.account,
                request.headers,
                attempt.route,
                body,
                raw=raw,
                query=request.query_string,
            )
        )
        headers = passback_headers(attempt, "codex")
        if upstream.status != 200 or upstream.content_type != "text/event-stream":
            return await _whole_answer(attempt, headers)
        reader = rs.ResponsesReader()
        if body.get("stream"):
            response = await start_stream(request, headers)
            await attempt.pump(reader, PassThrough(attempt, response, responses_fail_frame))
            return response
        # The upstream always streams; a non-streaming client gets the terminal event's object.
        fold = Fold(Transcript(), reads_all=False)
        await attempt.pump(reader, fold)
        headers.pop("Content-Type", None)
        headers.pop("content-type", None)
        answer = reader.response
        if fold.failure is not None or answer is None or answer.get("status") == "failed":
            error = answer.get("error") if isinstance(answer, dict) else None
            error = error if isinstance(error, dict) else {}
            code = fold.code or error.get("code") or "upstream_error"
            return web.json_response(
                {
                    "error": {
                        "type": "server_error",
                        "code": sanitize_code(code, "upstream_error"),
                        "message": fold.failure or error.get("message") or "upstream error",
                        "param": None,
                    },
                    "request_id": attempt.request_id,
                },
                status=504 if code == "upstream_timeout" else 502,
                headers=headers,
            )
        return web.json_response(answer, headers=headers)


async def _whole_answer(attempt: Attempt, headers: dict[str, str]) -> web.Response:
    """A non-stream upstream answer (an error, or JSON where a stream was asked) as is."""
    upstream = attempt.upstream
    assert upstream is not None
    data = await attempt.read_whole()
    if upstream.status == 200:
        attempt.record.outcome = "success"
        attempt.take_counts(*codex.usage_of_json(data))
    else:
        kind, message = attempt.note_error(data)
        if upstream.status in WAIT_STATUSES:
            # the body's reset time (note_error) is better than the header's wait
            headers["Retry-After"] = str(attempt.client_wait())
        if not _openai_shaped(data):
            # The ChatGPT backend answers FastAPI-style (`{"detail": ...}`); an OpenAI client
            # reads `error.message`, so the answer is retold in that shape, same status.
            response = upstream_error(
                "openai", upstream.status, kind, message, attempt.request_id, attempt.client_wait()
            )
            for name, value in headers.items():  # the quota headers still pass back
                if name.lower() not in ("content-type", "content-length"):
                    response.headers.setdefault(name, value)
            return response
    headers.pop("Content-Length", None)
    return web.Response(status=upstream.status, body=data, headers=headers)


def _openai_shaped(data: bytes) -> bool:
    try:
        payload = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(payload, dict) and isinstance(payload.get("error"), dict)


class CompactRoute:
    """POST /v1/responses/compact: Codex's history compaction, relayed as one JSON exchange."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        service = request.app[SERVICE]
        try:
            identity = await authenticate(request)
            body, raw = await json_body(request)
            route = _route_or_error(body)
            if route.provider != "codex":
                raise GatewayError(
                    "invalid_request",
                    "compaction is only available for Codex models",
                    param="model",
                )
        except GatewayError as err:
            return openai_error(err)
        attempt = Attempt(
            service,
            identity,
            route,
            protocol="openai-responses",
            operation="compact",
            transport=request.transport,
            body=body,
        )
        key = conversation_key(request.headers, body)

        async def exchange(a: Attempt) -> web.StreamResponse:
            await a.open(
                codex_builder(
                    service,
                    a.account,
                    request.headers,
                    route,
                    body,
                    operation="compact",
                    raw=raw,
                    query=request.query_string,
                )
            )
            return await _whole_answer(a, passback_headers(a, "codex"))

        return await serve(attempt, key, exchange, openai_error)


# --- the WebSocket --------------------------------------------------------------------------------


class TurnChain:
    """What a Responses socket remembers between turns so stateless HTTP turns can continue it:
    the last response id, and its full input followed by its output items."""

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.baseline: list[Any] = []

    def expand(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """(body for upstream, its full input) — a continuation gets the baseline prepended."""
        items = body.get("input")
        if isinstance(items, str):
            items = [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": items}],
                }
            ]
        elif not isinstance(items, list):
            items = []
        previous = body.get("previous_response_id")
        if previous and previous == self.response_id:
            items = self.baseline + items
            body = {k: v for k, v in body.items() if k != "previous_response_id"}
        return dict(body, input=items), items

    def remember(self, response_id: str | None, full_input: list[Any], output: list[Any]) -> None:
        self.response_id = response_id
        self.baseline = full_input + output if response_id else []

    def forget(self) -> None:
        self.remember(None, [], [])


def socket_error(
    err_type: str,
    code: str,
    message: str,
    status: int,
    request_id: str | None = None,
    retry_after: int | None = None,
) -> dict[str, Any]:
    """An error message a Responses socket client understands (Codex reads the wrapped
    `status`/`error`/`headers` form, the SDK the flat `code`/`message` one)."""
    event: dict[str, Any] = {
        "type": "error",
        "status": status,
        "code": code,
        "message": message,
        "param": None,
        "error": {"type": err_type, "code": code, "message": message, "param": None},
    }
    if retry_after is not None:
        event["headers"] = {"retry-after": str(retry_after)}
    if request_id:
        event["request_id"] = request_id
    return event


class ResponsesSocket:
    """GET /v1/responses with a WebSocket upgrade."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            identity = await authenticate(request)
        except GatewayError as err:
            return openai_error(err)
        ws = web.WebSocketResponse(max_msg_size=request.client_max_size, autoping=True)
        if not ws.can_prepare(request):
            return openai_error(
                GatewayError(
                    "upgrade_required",
                    "GET /v1/responses is a WebSocket; use POST for HTTP",
                    status=426,
                )
            )
        await ws.prepare(request)
        session = SocketSession(request, ws, identity)
        try:
            await session.run()
        finally:
            await session.shutdown()
        return ws


class SocketSession:
    """One client socket: reads messages, runs one turn at a time, each with its own lease."""

    def __init__(self, request: web.Request, ws: web.WebSocketResponse, identity: Any) -> None:
        self.request = request
        self.ws = ws
        self.identity = identity
        self.service = request.app[SERVICE]
        self.chain = TurnChain()
        self.codex_cli = codex.is_codex_cli(request.headers)
        self.turn: asyncio.Task[None] | None = None
        self.attempt: Attempt | None = None  # the running turn's
        self.send_lock = asyncio.Lock()
        self.guard = StallGuard(request.transport, self._stalled)
        self.guard.start()

    def _stalled(self) -> None:
        if self.attempt is not None:
            self.attempt.client_gone = "client_stalled"

    async def send(self, payload: dict[str, Any] | str) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        try:
            async with self.send_lock:
                await self.guard.write(self.ws.send_str(text))
        except (ConnectionError, RuntimeError, aiohttp.ClientConnectionResetError):
            gone = self.attempt.client_gone if self.attempt is not None else None
            raise ClientGone(gone or "client_disconnected") from None

    async def refuse(self, err: GatewayError, request_id: str | None = None) -> None:
        """A gateway error for one message; the socket stays open for the next."""
        retry = err.retry_after if err.status in WAIT_STATUSES else None
        try:
            await self.send(
                socket_error(err.openai_type, err.code, err.message, err.status, request_id, retry)
            )
        except ClientGone:
            pass

    async def run(self) -> None:
        async for message in self.ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                await self.on_text(message.data)
            elif message.type == aiohttp.WSMsgType.BINARY:
                await self.refuse(
                    GatewayError(
                        "invalid_request",
                        "binary messages are not supported; send response.create"
                        " as a JSON text message",
                    )
                )
            elif message.type == aiohttp.WSMsgType.ERROR:
                break

    async def shutdown(self) -> None:
        """The client went away: a running turn is cancelled, which releases its lease."""
        self.guard.stop()
        turn, self.turn = self.turn, None
        if turn is not None and not turn.done():
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)

    async def on_text(self, text: str) -> None:
        try:
            message = parse_json_object(text)
        except GatewayError as err:
            await self.refuse(err)
            return
        kind = message.get("type")
        if kind == "response.processed":
            return  # Codex acknowledging a finished turn; nothing to do over HTTP upstream
        if kind != "response.create":
            await self.refuse(
                GatewayError(
                    "invalid_request",
                    f"unsupported message type {str(kind)[:60]!r}; send response.create",
                )
            )
            return
        if self.turn is not None:  # turns run one after another on a socket
            await asyncio.gather(self.turn, return_exceptions=True)
            self.turn = None
        body = {k: v for k, v in message.items() if k not in ("type",)}
        try:
            route = _route_or_error(body)
        except GatewayError as err:
            await self.refuse(err)
            return
        if body.get("generate") is False:
            await self.prewarm(body)
            return
        self.turn = spawn(self.run_turn(body, route), name="responses-socket-turn")

    async def prewarm(self, body: dict[str, Any]) -> None:
        """`generate: false` warms the upstream's cache on a real socket; over stateless HTTP
        there is nothing to warm, so it is answered here: no lease, no record (R-REC-1)."""
        body, full = self.chain.expand(body)
        response_id = "resp_" + secrets.token_hex(12)
        shell = rs.response_shell(
            response_id, str(body.get("model")), int(self.service.clock.now())
        )
        try:
            await self.send(
                {"type": "response.created", "sequence_number": 0, "response": dict(shell)}
            )
            await self.send(
                {
                    "type": "response.completed",
                    "sequence_number": 1,
                    "response": dict(shell, status="completed"),
                }
            )
        except ClientGone:
            return
        self.chain.remember(response_id, full, [])

    async def run_turn(self, body: dict[str, Any], route: ModelRoute) -> None:
        body, full_input = self.chain.expand(body)
        # Codex CLI's HTTP requests carry `client_metadata` (0.171.0), so its socket turns keep
        # it; from other clients it is socket-only and not sent to the HTTP endpoint.
        dropped = (
            ("generate", "stream") if self.codex_cli else ("generate", "client_metadata", "stream")
        )
        for name in dropped:
            body.pop(name, None)
        key = conversation_key(self.request.headers, body)
        translated: dict[str, Any] | None = None
        if route.provider == "codex":
            body = rs.strip_foreign_reasoning(body) or body
        else:
            try:  # a turn that cannot be translated is refused before it costs a slot
                translated = _translated_body(dict(body, stream=True), route, key)[1]
            except GatewayError as err:
                self.chain.forget()
                await self.refuse(err)
                return
        attempt = Attempt(
            self.service,
            self.identity,
            route,
            protocol="openai-responses",
            operation="responses",
            transport=self.request.transport,
            body=body,
        )
        turn = SocketTurn(self, attempt)
        self.attempt = attempt
        try:
            attempt.admit(key)
        except GatewayError as err:
            self.chain.forget()
            await self.refuse(err, attempt.request_id)
            return
        try:
            if attempt.spilled_from is not None:  # R-AG-3: now the serving provider's turn
                route = attempt.route
                translated = _translated_body(dict(body, stream=True), route, key)[1]
            await self._exchange(attempt, turn, body, route, translated)
        except GatewayError as err:
            await self.refuse(err, attempt.request_id)
        except Exception as exc:
            attempt.close(exc)
            log.error(
                "internal error on a Responses socket turn (request %s): %s at %s",
                attempt.request_id,
                type(exc).__name__,
                where(exc),
            )
            await self.refuse(
                GatewayError(
                    "internal_error",
                    f"internal error; quote request id {attempt.request_id} when reporting it",
                ),
                attempt.request_id,
            )
            return
        except BaseException as exc:
            attempt.close(exc)
            raise
        finally:
            if turn.finished_ok:
                self.chain.remember(turn.response_id, full_input, turn.items)
            else:
                self.chain.forget()
        attempt.close(None)

    async def _exchange(
        self,
        attempt: Attempt,
        turn: SocketTurn,
        body: dict[str, Any],
        route: ModelRoute,
        translated: dict[str, Any] | None,
    ) -> None:
        headers = self.request.headers
        if translated is None:
            build = codex_builder(
                self.service,
                attempt.account,
                headers,
                route,
                body,
                raw=codex.socket_turn_body(body) if self.codex_cli else None,
                socket=True,
            )
            reader: Any = rs.ResponsesReader()
        else:
            build, reader = translated_call(
                self.service, attempt.account, headers, route, translated
            )
            turn.renderer = rs.ResponsesRenderer(
                str(body.get("model")),
                "resp_" + secrets.token_hex(12),
                int(self.service.clock.now()),
            )
        upstream_response = await attempt.open(build)
        if upstream_response.status != 200:
            data = await attempt.read_whole()
            kind, message = attempt.note_error(data)
            status = upstream_response.status
            retry = attempt.client_wait() if status in WAIT_STATUSES else None
            try:
                await self.send(
                    socket_error(
                        openai_type_for(status),
                        kind or f"http_{status}",
                        message,
                        status,
                        attempt.request_id,
                        retry,
                    )
                )
            except ClientGone as gone:
                attempt.client_gone = gone.code
            return
        await attempt.pump(reader, turn)


class SocketTurn:
    """The sink of one socket turn: every upstream (or rendered) event as one text message."""

    def __init__(self, session: SocketSession, attempt: Attempt) -> None:
        self.session = session
        self.attempt = attempt
        self.renderer: Any = None  # set when the turn is translated
        self.response_id: str | None = None
        self.items: list[Any] = []
        self.finished_ok = False

    @property
    def reads_all(self) -> bool:
        return self.renderer is not None

    def _note(self, payload: dict[str, Any]) -> bool:
        """Track what the chain needs; returns whether to stamp the request id on it."""
        kind = payload.get("type")
        if kind == "response.output_item.done" and isinstance(payload.get("item"), dict):
            self.items.append(payload["item"])
        if kind not in STAMPED:
            return False
        response = payload.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            self.response_id = response["id"]
        if kind in ("response.completed", "response.incomplete"):
            self.finished_ok = True
        return True

    async def take(self, chunk: bytes, batch: list[Frame]) -> None:
        send = self.session.send
        if self.renderer is not None:
            for _, events, _ in batch:
                for event in events:
                    for payload in self.renderer.render(event):
                        if self._note(payload):
                            payload = dict(payload, request_id=self.attempt.request_id)
                        await send(payload)
            return
        for data, _, payload in batch:
            if payload is None:  # a bulk delta left unread, or not an event object
                await send(data)
            elif self._note(payload):
                payload["request_id"] = self.attempt.request_id
                await send(payload)
            else:
                await send(data)  # unknown event types pass through untouched

    async def fail(self, message: str, code: str = "upstream_error") -> None:
        self.finished_ok = False
        status = 504 if code == "upstream_timeout" else 502
        await self.session.send(
            socket_error("server_error", code, message, status, self.attempt.request_id)
        )

    async def end(self, tally: Tally) -> None:
        if tally.finished is None:
            self.finished_ok = False
            await self.session.send(
                socket_error(
                    "server_error",
                    "upstream_error",
                    "the upstream stream ended before response.completed",
                    502,
                    self.attempt.request_id,
                )
            )
