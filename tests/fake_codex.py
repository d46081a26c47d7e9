"""A fake OpenAI Responses upstream: a real aiohttp server on loopback speaking PROTOCOLS.md
"OpenAI / Codex" — the ChatGPT backend (`/responses`, subscription tokens, `x-codex-*` quota
headers, 429 `usage_limit_reached`) and the platform API (`/v1/responses`, API keys).

Like the real ChatGPT backend it refuses what the proxy must not send it: a request without
`ChatGPT-Account-Id` / `originator`, `stream` other than true, `store` other than false,
`max_output_tokens` (400 "Unsupported parameter"), a string `input` and missing `instructions`. Tests script replies per token (or for
everyone) and read back what the upstream saw.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

DEFAULT_USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 12},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 2},
    "total_tokens": 29,
}


@dataclass
class CodexReply:
    """One scripted answer. kind: sse | error | drop | json, or a fault: hang (never sends
    headers), stall (response.created, then silence with the connection open)."""

    kind: str = "sse"
    status: int = 200
    text: str = "Hello from the fake Codex upstream."
    events: int = 3  # text deltas
    reasoning: str | None = None  # a reasoning summary, streamed, with encrypted content
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments JSON)
    terminal: str = "completed"  # completed | incomplete | failed | none (stream just ends)
    error_code: str = "server_error"  # for a failed terminal
    usage: dict[str, Any] = field(default_factory=lambda: json.loads(json.dumps(DEFAULT_USAGE)))
    headers: dict[str, str] = field(default_factory=dict)
    quota: bool = True  # x-codex-* headers (subscription requests only)
    retry_after: str | None = None
    error_body: dict[str, Any] | None = None  # for kind=error
    gate: asyncio.Event | None = None  # the stream waits on this before its terminal event
    delay_between: float = 0.0
    extra_events: list[dict[str, Any]] = field(default_factory=list)  # after response.created
    pad: int = 0  # characters of padding per text delta (big streams)


@dataclass
class Seen:
    token: str
    account_id: str | None
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def token_of(request: web.Request) -> str:
    auth = request.headers.get("Authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else ""


class FakeCodex:
    def __init__(self) -> None:
        self.scripts: dict[str, deque[CodexReply]] = defaultdict(deque)
        self.default = CodexReply()
        self.seen: list[Seen] = []
        # wham/usage: token -> body (or an HTTP status to refuse with), reads seen, concurrency
        self.usage_for: dict[str, Any] = {}
        self.usage_reads: list[tuple[str, str | None]] = []
        self.usage_in_flight = 0
        self.usage_max_in_flight = 0
        self.usage_gate: asyncio.Event | None = None
        self.in_flight: dict[str, int] = defaultdict(int)
        self.max_in_flight: dict[str, int] = defaultdict(int)
        self.cancelled = 0
        self.started = asyncio.Event()
        self.quota_used = 25.0  # primary used-percent reported in the headers
        # GET …/models: the slugs it lists, or a status to answer with; who asked
        self.model_ids: list[str] | int = ["gpt-5.5", "gpt-5.4-mini", "gpt-brand-new-6"]
        self.models_reads: list[str] = []
        self.refused: set[str] = set()  # access tokens answered with 401
        self._runner: web.AppRunner | None = None
        self.url = ""

    def script(self, token: str | None, *replies: CodexReply) -> None:
        self.scripts[token or "*"].extend(replies)

    def _next(self, token: str) -> CodexReply:
        for key in (token, "*"):
            if self.scripts[key]:
                return self.scripts[key].popleft()
        return self.default

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path in ("/responses", "/v1/responses"):
            app.router.add_post(path, self.responses)
            app.router.add_post(path + "/compact", self.compact)
        for path in ("/backend-api/wham/usage", "/api/codex/usage"):
            app.router.add_get(path, self.usage)
        for path in ("/models", "/v1/models"):
            app.router.add_get(path, self.models)
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

    def tokens_served(self) -> list[str]:
        return [s.token for s in self.seen]

    # --- checks the real backends make ---------------------------------------------------------

    @staticmethod
    def _subscription(request: web.Request) -> bool:
        return not request.path.startswith("/v1/")

    def _refusal(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        if not token_of(request):
            return web.json_response({"detail": "Unauthorized"}, status=401)
        if not self._subscription(request):
            return None
        if not request.headers.get("ChatGPT-Account-Id"):
            return web.json_response({"detail": "missing chatgpt-account-id"}, status=400)
        if request.headers.get("originator") != "codex_cli_rs":
            return web.json_response({"detail": "unknown originator"}, status=400)
        if request.path.endswith("/compact"):
            return None
        for name in ("max_output_tokens",):
            if name in body:
                return web.json_response({"detail": f"Unsupported parameter: {name}"}, status=400)
        if not isinstance(body.get("input"), list):
            return web.json_response({"detail": "Input must be a list"}, status=400)
        if not body.get("instructions"):
            return web.json_response({"detail": "Instructions are required"}, status=400)
        if body.get("stream") is not True:
            return web.json_response({"detail": "Stream must be set to true"}, status=400)
        if body.get("store") is not False:
            return web.json_response({"detail": "Store must be set to false"}, status=400)
        return None

    async def usage(self, request: web.Request) -> web.Response:
        token = token_of(request)
        self.usage_reads.append((token, request.headers.get("ChatGPT-Account-Id")))
        self.usage_in_flight += 1
        self.usage_max_in_flight = max(self.usage_max_in_flight, self.usage_in_flight)
        try:
            if self.usage_gate is not None:
                await self.usage_gate.wait()
            answer = self.usage_for.get(token, self.usage_for.get("*"))
            if isinstance(answer, int):
                return web.json_response(
                    {"error": "nope"}, status=answer, headers={"retry-after": "600"}
                )
            return web.json_response(answer or {"plan_type": "plus", "rate_limit": None})
        finally:
            self.usage_in_flight -= 1

    async def models(self, request: web.Request) -> web.Response:
        token = token_of(request)
        self.models_reads.append(token)
        if token in self.refused:
            return web.json_response({"error": {"message": "bad token"}}, status=401)
        if isinstance(self.model_ids, int):
            return web.json_response({"error": {"message": "scripted"}}, status=self.model_ids)
        if request.path.startswith("/v1/"):  # the platform API's list shape
            return web.json_response(
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "openai"}
                        for m in self.model_ids
                    ],
                }
            )
        return web.json_response(
            {"models": [{"slug": m, "display_name": m} for m in self.model_ids]}
        )

    def _headers(self, request: web.Request, reply: CodexReply) -> dict[str, str]:
        headers = {"x-request-id": "req_upstream_codex", **reply.headers}
        if reply.retry_after is not None:
            headers["retry-after"] = reply.retry_after
        if reply.quota and self._subscription(request):
            headers.update(
                {
                    "x-codex-primary-used-percent": str(self.quota_used),
                    "x-codex-primary-window-minutes": "300",
                    "x-codex-primary-reset-at": "1800003600",
                    "x-codex-secondary-used-percent": "40",
                    "x-codex-secondary-window-minutes": "10080",
                    "x-codex-secondary-reset-at": "1800300000",
                }
            )
        if request.headers.get("x-codex-turn-state"):
            headers["x-codex-turn-state"] = request.headers["x-codex-turn-state"]
        else:
            headers["x-codex-turn-state"] = "ts-fake-1"
        return headers

    # --- routes ---------------------------------------------------------------------------------

    async def compact(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.seen.append(
            Seen(
                token_of(request),
                request.headers.get("ChatGPT-Account-Id"),
                request.path,
                dict(request.headers),
                body,
            )
        )
        refused = self._refusal(request, body)
        if refused is not None:
            return refused
        reply = self._next(token_of(request))
        if reply.kind == "hang":
            await asyncio.Future()
        if reply.kind == "error" or reply.status != 200:
            return web.json_response(
                reply.error_body or {"error": {"type": "server_error", "message": "scripted"}},
                status=reply.status if reply.status != 200 else 500,
                headers=self._headers(request, reply),
            )
        return web.json_response(
            {
                "id": "resp_compact_1",
                "object": "response.compaction",
                "output": [{"type": "compaction", "encrypted_content": "compacted-history"}],
                "usage": reply.usage,
            },
            headers=self._headers(request, reply),
        )

    async def responses(self, request: web.Request) -> web.StreamResponse:
        token = token_of(request)
        body = await request.json()
        self.seen.append(
            Seen(
                token,
                request.headers.get("ChatGPT-Account-Id"),
                request.path,
                dict(request.headers),
                body,
            )
        )
        refused = self._refusal(request, body)
        if refused is not None:
            return refused
        reply = self._next(token)
        self.in_flight[token] += 1
        self.max_in_flight[token] = max(self.max_in_flight[token], self.in_flight[token])
        self.started.set()
        try:
            return await self._answer(request, body, reply)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight[token] -= 1

    async def _answer(
        self, request: web.Request, body: dict[str, Any], reply: CodexReply
    ) -> web.StreamResponse:
        headers = self._headers(request, reply)
        if reply.kind == "hang":
            await asyncio.Future()  # until the proxy gives up and disconnects
        if reply.kind == "error" or reply.status != 200:
            status = reply.status if reply.status != 200 else 500
            return web.json_response(
                reply.error_body
                or {
                    "error": {"type": "server_error", "code": "server_error", "message": "scripted"}
                },
                status=status,
                headers=headers,
            )
        script = Script(body, reply)
        if reply.kind == "json" or not body.get("stream"):
            return web.json_response(script.final("completed"), headers=headers)
        response = web.StreamResponse(headers={"content-type": "text/event-stream", **headers})
        await response.prepare(request)
        await response.write(script.event("response.created", response=script.shell()))
        if reply.kind == "drop":
            request.transport.close()
            return response
        if reply.kind == "stall":
            await asyncio.Future()
        await response.write(script.event("response.in_progress", response=script.shell()))
        for extra in reply.extra_events:
            await response.write(
                script.event(extra["type"], **{k: v for k, v in extra.items() if k != "type"})
            )
        for chunk in script.items():
            if reply.delay_between:
                await asyncio.sleep(reply.delay_between)
            await response.write(chunk)
        if reply.gate is not None:
            await reply.gate.wait()
        if reply.terminal != "none":
            await response.write(
                script.event(f"response.{reply.terminal}", response=script.final(reply.terminal))
            )
        return response


class Script:
    """The events of one scripted answer, in the order the Responses API sends them."""

    def __init__(self, body: dict[str, Any], reply: CodexReply) -> None:
        self.body = body
        self.reply = reply
        self.seq = 0
        self.output: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()

    def shell(self) -> dict[str, Any]:
        return {
            "id": "resp_fake_1",
            "object": "response",
            "created_at": 1800000000,
            "status": "in_progress",
            "model": self.body.get("model"),
            "output": [],
            "usage": None,
        }

    def final(self, terminal: str) -> dict[str, Any]:
        if not self.output:  # a JSON answer: build the items without streaming them
            for _ in self.items():
                pass
        response = dict(self.shell(), output=self.output, usage=self.reply.usage, status=terminal)
        if terminal == "incomplete":
            response["incomplete_details"] = {"reason": "max_output_tokens"}
        if terminal == "failed":
            response["error"] = {"code": self.reply.error_code, "message": "scripted failure"}
        return response

    def items(self):
        reply = self.reply
        index = 0
        if reply.reasoning is not None:
            item = {"type": "reasoning", "id": "rs_fake_1", "summary": []}
            yield self.event("response.output_item.added", output_index=index, item=item)
            yield self.event(
                "response.reasoning_summary_part.added",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                part={"type": "summary_text", "text": ""},
            )
            for piece in _split(reply.reasoning, 2):
                yield self.event(
                    "response.reasoning_summary_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
            done = dict(
                item,
                summary=[{"type": "summary_text", "text": reply.reasoning}],
                encrypted_content="enc-fake-reasoning",
            )
            self.output.append(done)
            yield self.event("response.output_item.done", output_index=index, item=done)
            index += 1
        if reply.text:
            item = {
                "type": "message",
                "id": "msg_fake_1",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            yield self.event("response.output_item.added", output_index=index, item=item)
            yield self.event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={"type": "output_text", "text": "", "annotations": []},
            )
            text = ""
            for piece in _split(reply.text, reply.events):
                piece += " " * reply.pad
                text += piece
                yield self.event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            part = {"type": "output_text", "text": text, "annotations": []}
            yield self.event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
            yield self.event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            done = dict(item, status="completed", content=[part])
            self.output.append(done)
            yield self.event("response.output_item.done", output_index=index, item=done)
            index += 1
        for n, (name, arguments) in enumerate(reply.tool_calls, 1):
            item = {
                "type": "function_call",
                "id": f"fc_fake_{n}",
                "call_id": f"call_fake_{n}",
                "name": name,
                "arguments": "",
                "status": "in_progress",
            }
            yield self.event("response.output_item.added", output_index=index, item=item)
            for piece in _split(arguments, 3):
                yield self.event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
            yield self.event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=arguments,
            )
            done = dict(item, arguments=arguments, status="completed")
            self.output.append(done)
            yield self.event("response.output_item.done", output_index=index, item=done)
            index += 1


def _split(text: str, parts: int) -> list[str]:
    parts = max(1, parts)
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
