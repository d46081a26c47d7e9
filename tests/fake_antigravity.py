"""A fake Google Antigravity upstream: a real aiohttp server on loopback speaking PROTOCOLS.md
"Google Antigravity" — `v1internal:streamGenerateContent?alt=sse` and `:generateContent` in the
envelope, `loadCodeAssist`, `fetchAvailableModels`, Google error bodies with RetryInfo, and
Google's OAuth token endpoint (`POST /token`, a form).

Like the real service it refuses what the proxy must not send: a missing or wrong project, a
string systemInstruction, roles other than user/model, function responses that do not pair with
the calls before them, a thought part whose signature it never issued, and (Gemini 3) a
function call sent back without the thought signature it was issued with (or Google's
documented placeholder). Tests script replies and read back what the upstream saw.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

PROJECT = "proj-fake-1"
# Google's documented dummy signature: accepted in place of one the client could not keep.
SKIP_SIGNATURE = "skip_thought_signature_validator"
MODELS = (
    "gemini-3-pro-high",
    "gemini-3-pro-low",
    "gemini-3-flash",
    "gemini-2.5-flash",
    "claude-sonnet-4-5",
    "claude-opus-4-5-thinking",
)
DEFAULT_USAGE = {
    "promptTokenCount": 200,
    "candidatesTokenCount": 12,
    "thoughtsTokenCount": 8,
    "totalTokenCount": 220,
    "cachedContentTokenCount": 150,
}


@dataclass
class AgReply:
    """One scripted answer. kind: ok (stream or whole, as asked) | error | raw."""

    kind: str = "ok"
    status: int = 200
    text: str = "Hello from the fake Antigravity upstream."
    chunks: int = 3
    thought: str | None = None  # streamed as signed thought parts
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finish: str | None = "STOP"  # None: the stream just ends
    usage: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    error_body: Any = None  # for kind=error: a dict, or bytes sent as they are
    gate: asyncio.Event | None = None  # the stream waits on this before its last event
    headers: dict[str, str] = field(default_factory=dict)  # on an error answer


@dataclass
class Seen:
    token: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def google_error(
    code: int, status: str, message: str, retry_delay: str | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "status": status, "message": message}
    if retry_delay is not None:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        ]
    return {"error": error}


def token_of(request: web.Request) -> str:
    auth = request.headers.get("Authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else ""


class FakeAntigravity:
    def __init__(self) -> None:
        self.scripts: deque[AgReply] = deque()
        self.default = AgReply()
        self.seen: list[Seen] = []
        self.project = PROJECT
        self.expired: set[str] = set()  # access tokens answered with 401
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> next access token
        self.refreshes: list[dict[str, str]] = []
        self.load_calls: list[str] = []
        self.quota_reads: list[tuple[str, str]] = []
        self.quota: dict[str, Any] = {
            m: {
                "displayName": m,
                "quotaInfo": {"remainingFraction": 1.0, "resetTime": "2030-01-01T00:00:00Z"},
            }
            for m in MODELS
        }
        self.quota_status = 200
        self.issued: dict[str, str] = {}  # function call id -> the signature it went out with
        self.thought_signatures: set[str] = set()
        self._n = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    def script(self, *replies: AgReply) -> None:
        self.scripts.extend(replies)

    def _next(self) -> AgReply:
        return self.scripts.popleft() if self.scripts else self.default

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1internal:streamGenerateContent", self.generate)
        app.router.add_post("/v1internal:generateContent", self.generate)
        app.router.add_post("/v1internal:loadCodeAssist", self.load_code_assist)
        app.router.add_post("/v1internal:fetchAvailableModels", self.fetch_models)
        app.router.add_post("/token", self.token)
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

    # --- auth ----------------------------------------------------------------------------------

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        token = token_of(request)
        if not token or token in self.expired:
            return web.json_response(
                google_error(
                    401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
                ),
                status=401,
            )
        return None

    async def token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.refreshes.append({k: str(v) for k, v in form.items()})
        if (
            request.content_type != "application/x-www-form-urlencoded"
            or form.get("grant_type") != "refresh_token"
            or not form.get("client_id")
            or not form.get("client_secret")
        ):
            return web.json_response({"error": "invalid_request"}, status=400)
        access = self.refresh_tokens.get(str(form.get("refresh_token")))
        if access is None:
            return web.json_response(
                {
                    "error": "invalid_grant",
                    "error_description": "Token has been expired or revoked.",
                },
                status=400,
            )
        return web.json_response(
            {"access_token": access, "expires_in": 3599, "token_type": "Bearer"}
        )

    # --- metadata ------------------------------------------------------------------------------

    async def load_code_assist(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        if body.get("metadata", {}).get("pluginType") != "GEMINI":
            return web.json_response(
                google_error(400, "INVALID_ARGUMENT", "bad metadata"), status=400
            )
        self.load_calls.append(token_of(request))
        return web.json_response(
            {
                "currentTier": {"id": "standard-tier"},
                "cloudaicompanionProject": {"id": self.project},
            }
        )

    async def fetch_models(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.quota_reads.append((token_of(request), str(body.get("project"))))
        if self.quota_status != 200:
            return web.json_response(
                google_error(self.quota_status, "RESOURCE_EXHAUSTED", "slow down", "30s"),
                status=self.quota_status,
            )
        return web.json_response({"models": self.quota})

    # --- generation ----------------------------------------------------------------------------

    def _refusal(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        def bad(message: str, code: int = 400, status: str = "INVALID_ARGUMENT") -> web.Response:
            return web.json_response(google_error(code, status, message), status=code)

        if not request.headers.get("User-Agent", "").startswith("antigravity/"):
            return bad("unknown client")
        if body.get("project") != self.project:
            return bad(
                f"Permission denied on project {body.get('project')!r}", 403, "PERMISSION_DENIED"
            )
        if body.get("userAgent") != "antigravity" or not str(body.get("requestId", "")).startswith(
            "agent-"
        ):
            return bad("bad envelope")
        if body.get("model") not in MODELS:
            return bad(f"Requested entity was not found: {body.get('model')}", 404, "NOT_FOUND")
        inner = body.get("request")
        if not isinstance(inner, dict) or not isinstance(inner.get("contents"), list):
            return bad("request.contents is required")
        system = inner.get("systemInstruction")
        if system is not None and not isinstance(system, dict):
            return bad("Invalid value at 'request.system_instruction'")
        contents = inner["contents"]
        for index, content in enumerate(contents):
            if content.get("role") not in ("user", "model"):
                return bad(f"Please use a valid role: user, model (got {content.get('role')})")
            calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
            for part in content["parts"]:
                call = part.get("functionCall")
                if (
                    call
                    and call.get("id") in self.issued
                    and part.get("thoughtSignature")
                    not in (self.issued[call["id"]], SKIP_SIGNATURE)
                ):
                    return bad(
                        "Function call is missing a thought_signature in functionCall"
                        f" parts (call {call['id']})"
                    )
                if (
                    part.get("thought")
                    and part.get("thoughtSignature") not in self.thought_signatures
                ):
                    return bad("Corrupted thought signature.")
            if calls:
                after = contents[index + 1] if index + 1 < len(contents) else None
                answered = (
                    [
                        p["functionResponse"].get("id")
                        for p in (after or {}).get("parts", [])
                        if "functionResponse" in p
                    ]
                    if after
                    else []
                )
                if after is not None and answered != [c.get("id") for c in calls]:
                    return bad("function response parts must pair with the function call parts")
        return None

    def _parts(self, reply: AgReply, model: str) -> list[list[dict[str, Any]]]:
        """The answer as chunks of parts (one chunk per SSE event)."""
        self._n += 1
        chunks: list[list[dict[str, Any]]] = []
        if reply.thought:
            signature = f"sig-thought-{self._n}"
            self.thought_signatures.add(signature)
            half = len(reply.thought) // 2
            chunks.append([{"thought": True, "text": reply.thought[:half]}])
            chunks.append(
                [{"thought": True, "text": reply.thought[half:], "thoughtSignature": signature}]
            )
        size = max(1, -(-len(reply.text) // max(1, reply.chunks)))
        for i in range(0, len(reply.text), size):
            chunks.append([{"text": reply.text[i : i + size]}])
        for i, (name, args) in enumerate(reply.tool_calls):
            call_id = f"fc-{self._n}-{i}"
            part: dict[str, Any] = {"functionCall": {"name": name, "args": args, "id": call_id}}
            if i == 0 and model.startswith("gemini-3"):
                part["thoughtSignature"] = self.issued[call_id] = f"sig-call-{self._n}"
            chunks.append([part])
        return chunks

    @staticmethod
    def _payload(
        parts: list[dict[str, Any]],
        finish: str | None = None,
        usage: dict[str, Any] | None = None,
        model: str = "",
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finish:
            candidate["finishReason"] = finish
        response: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": model,
            "responseId": "resp-fake",
        }
        if usage:
            response["usageMetadata"] = usage
        return {"response": response, "traceId": "trace-fake"}

    async def generate(self, request: web.Request) -> web.StreamResponse:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.seen.append(Seen(token_of(request), request.path_qs, dict(request.headers), body))
        refusal = self._refusal(request, body)
        if refusal is not None:
            return refusal
        reply = self._next()
        if reply.kind == "error":
            if isinstance(reply.error_body, bytes):
                return web.Response(
                    status=reply.status, body=reply.error_body, content_type="text/html"
                )
            return web.json_response(reply.error_body, status=reply.status, headers=reply.headers)
        model = str(body["model"])
        chunks = self._parts(reply, model)
        stream = request.path.endswith(":streamGenerateContent")
        if not stream:
            parts = [p for chunk in chunks for p in chunk]
            return web.json_response(self._payload(parts, reply.finish, reply.usage, model))
        if (
            request.query.get("alt") != "sse"
            or request.headers.get("Accept") != "text/event-stream"
        ):
            return web.json_response(
                google_error(400, "INVALID_ARGUMENT", "alt=sse expected"), status=400
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(
                f"data: {json.dumps(self._payload(chunk, model=model))}\r\n\r\n".encode()
            )
        if reply.gate is not None:
            await reply.gate.wait()
        if reply.finish:
            last = self._payload([{"text": ""}], reply.finish, reply.usage, model)
            await response.write(f"data: {json.dumps(last)}\r\n\r\n".encode())
        await response.write_eof()
        return response
