"""A fake OpenAI Responses upstream: a real aiohttp server on loopback speaking PROTOCOLS.md
"OpenAI / Codex" — the ChatGPT backend (`/responses`, subscription tokens, `x-codex-*` quota
headers, 429 `usage_limit_reached`) and the platform API (`/v1/responses`, API keys).

Like the real ChatGPT backend (docs/upstreams.md "Codex") it refuses what the proxy must not send
it, in the backend's own words: a request without `ChatGPT-Account-Id` or a Codex `originator`,
`stream` other than true ("Stream must be set to true"), `store` other than false ("Store must
be set to false"), a body field the subscription backend does not take (`temperature`, `top_p`,
`max_output_tokens`, … : 400 `{"detail":"Unsupported parameter: temperature"}`), an input item
with `role: "system"` ("System messages are not allowed") and a string `input`. Its model list
hides models newer than the `client_version` asked with; its quota headers carry windows by
length (a plan may have no 5-hour window) and per-model limit families
(`x-codex-active-limit`, `x-<limit>-primary-*`); a request for a model whose limit family is
spent gets 429 `usage_limit_reached` naming that limit. Tests script replies per token (or for
everyone) and read back what the upstream saw, down to the body bytes. Its `/oauth/token`
speaks auth.openai.com's refresh grant with single-use refresh tokens (a reused one: 401
`refresh_token_reused`).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fake_authorize import AuthorizationServer, Grant, Words, loopback

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
    raw: bytes = b""  # the body bytes as they arrived
    query: str = ""
    header_items: list[tuple[str, str]] = field(default_factory=list)  # in order, as sent


# Body fields the ChatGPT backend answers with 400 "Unsupported parameter: <name>": the first
# three by its own words (PROTOCOLS.md), the rest because both CLIProxyAPI
# (translator/codex/openai/responses) and claude-relay-service (routes/openaiRoutes.js) delete
# them before every Codex request; `context_management` by the words CLIProxyAPI quotes.
UNSUPPORTED = (
    "temperature",
    "top_p",
    "max_output_tokens",
    "truncation",
    "user",
    "safety_identifier",
    "prompt_cache_retention",
    "context_management",
)
# The originators Codex's own clients send (claude-relay-service codexCliValidator.js):
# codex_cli_rs (the TUI), codex_exec (`codex exec`), codex_vscode (the IDE extension).
ORIGINATOR_PREFIX = "codex_"


def version_tuple(text: str | None) -> tuple[int, ...]:
    parts = []
    for piece in (text or "0").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


@dataclass
class Window:
    """One quota window as the backend reports it: used percent, length, reset time."""

    used: float
    minutes: int
    reset_at: int = 1800003600


@dataclass
class LimitFamily:
    """A per-model limit (openai/codex codex-api/src/rate_limits.rs): its id names the header
    family `x-<id with - for _>-primary-*`, its name what `-limit-name` says."""

    name: str
    models: tuple[str, ...]
    primary: Window
    secondary: Window | None = None


CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
# auth.openai.com's words (the reused one as ChatGPT users see it; the code is what
# openai/codex `codex-rs/login/src/auth/manager.rs` classifies as "exhausted").
REUSED = (
    "Your refresh token has already been used to generate a new access token. "
    "Please try signing in again."
)
INVALIDATED = "Your refresh token was revoked. Please try signing in again."  # (unverified)


# auth.openai.com is ORY Hydra (openai/codex `codex-rs/login/src/server.rs`: "the Codex CLI
# Hydra redirect URI allow-list"), so the code exchange refuses in fosite's words
# (ory/fosite `errors.go`, `handler/oauth2/flow_authorize_code_token.go`, `handler/pkce`).
INVALID_GRANT = (
    "The provided authorization grant (e.g., authorization code, resource owner credentials) or"
    " refresh token is invalid, expired, revoked, does not match the redirection URI used in the"
    " authorization request, or was issued to another client."
)


def grant_error(hint: str) -> tuple[int, dict[str, Any]]:
    return 400, {"error": "invalid_grant", "error_description": f"{INVALID_GRANT} {hint}"}


SIGNIN_WORDS = Words(
    bad_code=grant_error("The authorization code has already been used or is not known."),
    bad_verifier=grant_error("The PKCE code challenge did not match the code verifier."),
    bad_redirect=grant_error(
        "The 'redirect_uri' from this request does not match the one from the authorize request."
    ),
    bad_client=(
        401,
        {
            "error": "invalid_client",
            "error_description": "Client authentication failed (e.g., unknown client, no client"
            " authentication included, or unsupported authentication method).",
        },
    ),
)


def token_error(code: str, message: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }


def fake_jwt(claims: dict[str, Any]) -> str:
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2ln"


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
        self.usage_seen = asyncio.Condition()  # notified at each read (`usage_read_by`)
        self.usage_in_flight = 0
        self.usage_max_in_flight = 0
        self.usage_gate: asyncio.Event | None = None
        self.in_flight: dict[str, int] = defaultdict(int)
        self.max_in_flight: dict[str, int] = defaultdict(int)
        self.cancelled = 0
        self.started = asyncio.Event()
        self.quota_used = 25.0  # primary used-percent reported in the headers
        # The account-wide windows of the headers, primary first: a plan without the 5-hour
        # window reports a lone 7-day (10080 minute) primary.
        self.windows: list[Window] | None = None
        # Per-model limit families by limit id (e.g. "codex_bengalfox").
        self.families: dict[str, LimitFamily] = {}
        # GET …/models: the slugs it lists, or a status to answer with; who asked
        self.model_ids: list[str] | int = ["gpt-5.5", "gpt-5.4-mini", "gpt-brand-new-6"]
        # A model the backend lists only to clients at least this new (`minimal_client_version`)
        self.model_min_version: dict[str, str] = {"gpt-brand-new-6": "0.150.0"}
        self.models_reads: list[str] = []
        self.models_versions: list[str | None] = []
        self.refused: set[str] = set()  # access tokens answered with 401
        # auth.openai.com's token endpoint, refresh grant (R-LOGIN-2): refresh token -> (new
        # access token, new refresh token). Each is single-use, as the real one is: a spent
        # token is refused 401 `refresh_token_reused` (openai/codex `codex-rs/login`).
        self.refresh_grants: dict[str, tuple[str, str]] = {}
        self.refresh_calls: list[dict[str, Any]] = []
        self.spent_refresh: set[str] = set()
        self.account_id = "acct-fake"  # the ChatGPT account the id_token it issues names
        self.refresh_expires_in: int | None = 864000  # None: answer without expires_in
        # Browser sign-in (R-LOGIN-1): the authorize page and the form-encoded code exchange.
        # Hydra's allow-list holds Codex's loopback on 1455 and its fallback 1457; a test that
        # listens elsewhere registers its port here.
        self.redirect_ports = {1455, 1457}
        self.signins = 0
        self.oauth = AuthorizationServer(
            client_id=CODEX_CLIENT_ID,
            redirect_ok=lambda uri: loopback("/auth/callback", self.redirect_ports)(uri),
            words=SIGNIN_WORDS,
            issue=self._issue_signin,
            prefix="ac",
        )
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
        app.router.add_post("/oauth/token", self.oauth_token)
        app.router.add_get("/oauth/authorize", self.oauth.authorize)
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

    async def oauth_token(self, request: web.Request) -> web.Response:
        """`POST /oauth/token` with a JSON refresh grant, as Codex sends it, or a form-encoded
        authorization-code exchange (its login server's)."""
        if request.content_type == "application/x-www-form-urlencoded":
            form = {k: str(v) for k, v in (await request.post()).items()}
            if form.get("grant_type") == "authorization_code":
                status, answer = self.oauth.exchange(form)
                return web.json_response(answer, status=status)
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return web.json_response(
                token_error("invalid_request", "Invalid JSON body"), status=400
            )
        if body.get("grant_type") == "refresh_token":
            return self.refresh_grant(body)
        return web.json_response(
            token_error("unsupported_grant_type", "Unsupported grant type"), status=400
        )

    def _issue_signin(self, grant: Grant) -> dict[str, Any]:
        self.signins += 1
        n = self.signins
        auth = {"chatgpt_account_id": f"{self.account_id}-{n}", "chatgpt_plan_type": "pro"}
        return {
            "access_token": fake_jwt({"exp": 4_102_444_800, "https://api.openai.com/auth": auth}),
            "refresh_token": f"rt-signin-{n}",
            "id_token": fake_jwt(
                {"email": f"person{n}@example.com", "https://api.openai.com/auth": auth}
            ),
            "expires_in": 864000,
            "token_type": "Bearer",
            "scope": grant.scope,
        }

    def refresh_grant(self, body: dict[str, Any]) -> web.Response:
        self.refresh_calls.append(body)
        if body.get("client_id") != CODEX_CLIENT_ID:
            return web.json_response(token_error("invalid_client", "Unknown client"), status=401)
        token = str(body.get("refresh_token"))
        if token in self.spent_refresh:
            return web.json_response(token_error("refresh_token_reused", REUSED), status=401)
        grant = self.refresh_grants.get(token)
        if grant is None:
            return web.json_response(
                token_error("refresh_token_invalidated", INVALIDATED), status=401
            )
        self.spent_refresh.add(token)
        access, refresh = grant
        claims = {"https://api.openai.com/auth": {"chatgpt_account_id": self.account_id}}
        answer = {
            "access_token": access,
            "refresh_token": refresh,
            "id_token": fake_jwt(claims),
            "expires_in": self.refresh_expires_in,
            "token_type": "Bearer",
            "scope": "openid profile email offline_access",
        }
        if self.refresh_expires_in is None:
            del answer["expires_in"]
        return web.json_response(answer)

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
        if not request.headers.get("originator", "").startswith(ORIGINATOR_PREFIX):
            return web.json_response({"detail": "unknown originator"}, status=400)
        if request.path.endswith("/compact"):
            return None
        for name in UNSUPPORTED:
            if name in body:
                return web.json_response({"detail": f"Unsupported parameter: {name}"}, status=400)
        if not isinstance(body.get("input"), list):
            return web.json_response({"detail": "Input must be a list"}, status=400)
        # No `instructions` is fine: Codex CLI 0.171.0 sends none (its prompt is a developer
        # item), and the backend takes its requests.
        if any(isinstance(item, dict) and item.get("role") == "system" for item in body["input"]):
            return web.json_response({"detail": "System messages are not allowed"}, status=400)
        if body.get("stream") is not True:
            return web.json_response({"detail": "Stream must be set to true"}, status=400)
        if body.get("store") is not False:
            return web.json_response({"detail": "Store must be set to false"}, status=400)
        return None

    async def usage_read_by(self, token: str) -> None:
        """Returns once wham/usage was asked with `token` (a read the server starts by itself)."""
        async with self.usage_seen:
            await self.usage_seen.wait_for(lambda: any(t == token for t, _ in self.usage_reads))

    async def usage(self, request: web.Request) -> web.Response:
        token = token_of(request)
        self.usage_reads.append((token, request.headers.get("ChatGPT-Account-Id")))
        async with self.usage_seen:
            self.usage_seen.notify_all()
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
        self.models_versions.append(request.query.get("client_version"))
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
        # The ChatGPT backend lists only what a client of the asked version may use.
        asked = version_tuple(request.query.get("client_version"))
        return web.json_response(
            {
                "models": [
                    {
                        "slug": m,
                        "display_name": m,
                        "minimal_client_version": self.model_min_version.get(m, "0.1.0"),
                    }
                    for m in self.model_ids
                    if version_tuple(self.model_min_version.get(m, "0.1.0")) <= asked
                ]
            }
        )

    def _headers(
        self, request: web.Request, reply: CodexReply, model: str | None = None
    ) -> dict[str, str]:
        headers = {"x-request-id": "req_upstream_codex", **reply.headers}
        if reply.retry_after is not None:
            headers["retry-after"] = reply.retry_after
        if reply.quota and self._subscription(request):
            windows = self.windows or [
                Window(self.quota_used, 300, 1800003600),
                Window(40, 10080, 1800300000),
            ]
            active = self.active_limit(model)
            if active != "codex":  # `x-codex-*` carries the active limit's numbers
                family = self.families[active]
                windows = [w for w in (family.primary, family.secondary) if w]
            headers.update(window_headers("codex", windows))
            for limit_id, family in self.families.items():
                headers.update(
                    window_headers(limit_id, [w for w in (family.primary, family.secondary) if w])
                )
                headers[f"x-{limit_id.replace('_', '-')}-limit-name"] = family.name
            headers["x-codex-active-limit"] = self.active_limit(model)
        if request.headers.get("x-codex-turn-state"):
            headers["x-codex-turn-state"] = request.headers["x-codex-turn-state"]
        else:
            headers["x-codex-turn-state"] = "ts-fake-1"
        return headers

    def active_limit(self, model: str | None) -> str:
        """The limit a request for this model counts against: its family's, else `codex`."""
        for limit_id, family in self.families.items():
            if model in family.models:
                return limit_id
        return "codex"

    def _spent_family(self, model: Any) -> web.Response | None:
        """A model whose own limit is spent: 429 naming that limit (openai/codex
        core/tests/suite/account_pool.rs `usage_limit_response`), the account's other models
        still served."""
        limit_id = self.active_limit(model)
        family = self.families.get(limit_id)
        if family is None or family.primary.used < 100:
            return None
        headers = window_headers(limit_id, [family.primary])
        headers.update(window_headers("codex", [family.primary]))
        headers["x-codex-active-limit"] = limit_id
        return web.json_response(
            {
                "error": {
                    "type": "usage_limit_reached",
                    "message": "The usage limit has been reached",
                    "resets_at": family.primary.reset_at,
                }
            },
            status=429,
            headers=headers,
        )

    # --- routes ---------------------------------------------------------------------------------

    async def compact(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw)
        self.seen.append(
            Seen(
                token_of(request),
                request.headers.get("ChatGPT-Account-Id"),
                request.path,
                dict(request.headers),
                body,
                raw,
                request.query_string,
                list(request.headers.items()),
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
        raw = await request.read()
        body = json.loads(raw)
        self.seen.append(
            Seen(
                token,
                request.headers.get("ChatGPT-Account-Id"),
                request.path,
                dict(request.headers),
                body,
                raw,
                request.query_string,
                list(request.headers.items()),
            )
        )
        refused = self._refusal(request, body)
        if refused is not None:
            return refused
        if self._subscription(request):
            spent = self._spent_family(body.get("model"))
            if spent is not None:
                return spent
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
        headers = self._headers(request, reply, body.get("model"))
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


def window_headers(limit_id: str, windows: list[Window]) -> dict[str, str]:
    """`x-<limit>-{primary,secondary}-*` for up to two windows, in slot order."""
    prefix = "x-" + limit_id.replace("_", "-")
    headers = {}
    for slot, window in zip(("primary", "secondary"), windows, strict=False):
        headers[f"{prefix}-{slot}-used-percent"] = str(window.used)
        headers[f"{prefix}-{slot}-window-minutes"] = str(window.minutes)
        headers[f"{prefix}-{slot}-reset-at"] = str(window.reset_at)
    return headers


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
