"""A fake Google Antigravity upstream: a real aiohttp server on loopback speaking PROTOCOLS.md
"Google Antigravity" — `v1internal:streamGenerateContent?alt=sse` and `:generateContent` in the
envelope, `loadCodeAssist`, `onboardUser` and its long-running operation, `fetchAvailableModels`,
Google error bodies (RetryInfo, or only an ErrorInfo for a spent quota), and Google's OAuth token
endpoint (`POST /token`, a form).

Like the real service it refuses what the proxy must not send (docs/upstreams.md lists each rule
with its public source): a client version below 2.9.0 in the user agent, a `loadCodeAssist`
that does not say it is Antigravity, generation without a project (a login gets one only once
`onboardUser` has run) or with another login's, an envelope without `requestType` or
`request.sessionId`, a model its `fetchAvailableModels` does not list (retired names are 404
NOT_FOUND), a string systemInstruction, roles other than user/model, function responses that do
not pair with the calls before them, a thought part whose signature it never issued, and
(Gemini 3) a function call sent back without the thought signature it was issued with (or
Google's documented placeholder). An expired token is answered 401, or 403 when the test says
so. The same server answers under several host prefixes (`HOSTS`: daily, sandbox, production),
so a test can point SubLane's host order at it and see which host was asked, and make one host
fail. Tests script replies and read back what the upstream saw.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fake_authorize import AuthorizationServer, Grant, Words, loopback

PROJECT = "proj-fake-1"
# Google's documented dummy signature: accepted in place of one the client could not keep.
SKIP_SIGNATURE = "skip_thought_signature_validator"
# What fetchAvailableModels lists in August 2026 (PROTOCOLS.md; sub2api issue 5884 shows daily's
# live list): generation serves exactly these.
MODELS = (
    "claude-opus-4-6-thinking",
    "claude-sonnet-4-6",
    "gemini-3.1-pro-high",
    "gemini-3.1-pro-low",
    "gemini-3-flash",
)
# Names the service once served and now answers 404 NOT_FOUND (sub2api issue 5884,
# vscode-unify-chat-provider issue 43: `{"code": 404, "message": "Requested entity was not
# found.", "status": "NOT_FOUND"}`).
RETIRED = (
    "claude-sonnet-4-5",
    "claude-sonnet-4-5-thinking",
    "claude-opus-4-5-thinking",
    "gemini-3-pro-high",
    "gemini-3-pro-low",
    "gemini-2.5-flash",
)
# Cloud Code refuses current models to older clients (CLIProxyAPI internal/misc/
# antigravity_version.go: "Cloud Code rejects newer models for clients below 2.9.0"); the words
# are the ones users quote in the issue threads (Antigravity-Manager 3075, antigravity-cli 568).
MIN_CLIENT_VERSION = (2, 9, 0)
OUTDATED = (
    "This version of Antigravity is no longer supported. Please upgrade to receive the latest"
    " features."
)
NOT_FOUND = "Requested entity was not found."
# Host prefixes the one server answers under, standing in for Google's three hosts.
HOSTS = {"daily": "/daily", "sandbox": "/sandbox", "production": "/prod"}
REQUEST_TYPES = ("agent", "image_gen", "web_search")
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


def quota_exhausted_error(model: str, delay: str, reset_stamp: str) -> dict[str, Any]:
    """A spent per-model quota as Cloud Code answers it: 429 with only an ErrorInfo (no
    RetryInfo), its reset as a Go duration and an RFC 3339 time (antigravity-claude-proxy
    src/cloudcode/rate-limit-parser.js; CLIProxyAPI helps/json_retry_helpers.go reads the same
    field with Go's time.ParseDuration)."""
    return {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": f"You have exhausted your capacity on this model. Your quota will reset"
            f" after {delay}.",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "QUOTA_EXHAUSTED",
                    "domain": "cloudcode-pa.googleapis.com",
                    "metadata": {
                        "model": model,
                        "quotaResetDelay": delay,
                        "quotaResetTimeStamp": reset_stamp,
                    },
                }
            ],
        }
    }


def client_version(user_agent: str) -> tuple[int, ...] | None:
    """The version in `antigravity/<version> <os>/<arch>`, None when it is not that form."""
    if not user_agent.startswith("antigravity/"):
        return None
    version = user_agent[len("antigravity/") :].split(" ", 1)[0]
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        return None


# Antigravity's installed-app client (CLIProxyAPI `internal/auth/antigravity/constants.go`).
ANTIGRAVITY_CLIENT = (
    "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com",
    "GOCSPX-K58FWR486" + "LdLJ1mLB8sXC4z6qDAf",
)
# Google's token endpoint refusing a code exchange (R-LOGIN-1): a spent or unknown code is
# "Bad Request" (googleapis/google-auth-library-nodejs issue 1518; older answers said "Code was
# already redeemed."), a wrong verifier "Invalid code verifier." (googleapis/google-api-java-client
# issue 1479), an unknown client "The OAuth client was not found.".
SIGNIN_WORDS = Words(
    bad_code=(400, {"error": "invalid_grant", "error_description": "Bad Request"}),
    bad_verifier=(400, {"error": "invalid_grant", "error_description": "Invalid code verifier."}),
    bad_redirect=(400, {"error": "redirect_uri_mismatch", "error_description": "Bad Request"}),
    bad_client=(
        401,
        {"error": "invalid_client", "error_description": "The OAuth client was not found."},
    ),
)


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
        self.forbidden: set[str] = set()  # expired access tokens Google answers with 403
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> next access token
        self.refreshes: list[dict[str, str]] = []
        # Browser sign-in (R-LOGIN-1): accounts.google.com's authorize page (installed apps may
        # use any loopback port, RFC 8252) and the form-encoded exchange with the client secret.
        self.signins = 0
        self.oauth = AuthorizationServer(
            client_id=ANTIGRAVITY_CLIENT[0],
            redirect_ok=loopback("/oauth-callback"),
            words=SIGNIN_WORDS,
            issue=self._issue_signin,
            prefix="4/0signin",
        )
        self.load_calls: list[str] = []
        self.load_bodies: list[dict[str, Any]] = []
        # Logins (by access token) with no project until onboardUser has run for them, and
        # those onboarding never gives one (an ineligible account).
        self.unprovisioned: set[str] = set()
        self.ineligible: set[str] = set()
        self.onboard_polls = 2  # operation reads before an onboarding is done
        self.onboard_calls: list[dict[str, Any]] = []
        self.operation_reads: list[str] = []
        self._operations: dict[str, tuple[str, int]] = {}  # name -> (token, reads left)
        self.quota_reads: list[tuple[str, str]] = []
        self.quota_seen = asyncio.Condition()  # notified at each read (`quota_read_by`)
        self.quota: dict[str, Any] = {
            m: {
                "displayName": m,
                "quotaInfo": {"remainingFraction": 1.0, "resetTime": "2030-01-01T00:00:00Z"},
            }
            for m in MODELS
        }
        self.quota_status = 200
        # model -> (quotaResetDelay, quotaResetTimeStamp): generation answers the 429 above
        self.exhausted: dict[str, tuple[str, str]] = {}
        # host name (HOSTS) -> the status it answers every call with (a host that is down)
        self.host_status: dict[str, int] = {}
        self.host_calls: list[tuple[str, str]] = []  # (host name or "", method) in order
        self.issued: dict[str, str] = {}  # function call id -> the signature it went out with
        self.thought_signatures: set[str] = set()
        self._n = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    def script(self, *replies: AgReply) -> None:
        self.scripts.extend(replies)

    def _next(self) -> AgReply:
        return self.scripts.popleft() if self.scripts else self.default

    def host(self, name: str) -> str:
        """The base URL that stands for one of Google's hosts (`HOSTS`)."""
        return self.url + HOSTS[name]

    @property
    def served(self) -> tuple[str, ...]:
        """What generation serves: the models fetchAvailableModels lists."""
        return tuple(self.quota)

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("", *HOSTS.values()):
            app.router.add_post(f"{prefix}/v1internal:streamGenerateContent", self.generate)
            app.router.add_post(f"{prefix}/v1internal:generateContent", self.generate)
            app.router.add_post(f"{prefix}/v1internal:loadCodeAssist", self.load_code_assist)
            app.router.add_post(f"{prefix}/v1internal:onboardUser", self.onboard_user)
            app.router.add_get(f"{prefix}/v1internal/operations/{{op}}", self.operation)
            app.router.add_post(f"{prefix}/v1internal:fetchAvailableModels", self.fetch_models)
        app.router.add_post("/token", self.token)
        app.router.add_get("/o/oauth2/v2/auth", self.oauth.authorize)
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

    # --- hosts ---------------------------------------------------------------------------------

    def _host_refusal(self, request: web.Request) -> web.Response | None:
        """Note which host was asked for what; a host the test took down answers its status."""
        name = next((n for n, prefix in HOSTS.items() if request.path.startswith(prefix + "/")), "")
        method = request.path.rsplit(":", 1)[-1] if ":" in request.path else "operation"
        self.host_calls.append((name, method))
        status = self.host_status.get(name)
        if status is None:
            return None
        return web.json_response(
            google_error(status, "UNAVAILABLE", "No capacity available for model on this host."),
            status=status,
        )

    # --- auth ----------------------------------------------------------------------------------

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        refused = self._host_refusal(request)
        if refused is not None:
            return refused
        token = token_of(request)
        if token in self.forbidden:
            # Google answers an expired token 403 as often as 401 (PROTOCOLS.md).
            return web.json_response(
                google_error(403, "PERMISSION_DENIED", "The caller does not have permission"),
                status=403,
            )
        if not token or token in self.expired:
            return web.json_response(
                google_error(
                    401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
                ),
                status=401,
            )
        return None

    def _issue_signin(self, grant: Grant) -> dict[str, Any]:
        self.signins += 1
        n = self.signins
        access, refresh = f"ya29.signin-{n}", f"1//signin-{n}"
        answer = {
            "access_token": access,
            "expires_in": 3599,
            "scope": grant.scope,
            "token_type": "Bearer",
        }
        # Google gives a refresh token only to an offline request (and, for a returning
        # user, only with prompt=consent): Google's "Using OAuth 2.0 for web server
        # applications" (access_type); CLIProxyAPI sends both.
        if grant.query.get("access_type") == "offline" and grant.query.get("prompt") == "consent":
            answer["refresh_token"] = refresh
            self.refresh_tokens[refresh] = f"ya29.signin-{n}-renewed"
        return answer

    def signin_exchange(self, form: dict[str, str]) -> web.Response:
        if form.get("client_id") == ANTIGRAVITY_CLIENT[0] and (
            form.get("client_secret") != ANTIGRAVITY_CLIENT[1]
        ):
            return web.json_response(
                {"error": "invalid_client", "error_description": "Unauthorized"}, status=401
            )
        status, answer = self.oauth.exchange(form)
        return web.json_response(answer, status=status)

    async def token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        if (
            request.content_type == "application/x-www-form-urlencoded"
            and form.get("grant_type") == "authorization_code"
        ):
            return self.signin_exchange({k: str(v) for k, v in form.items()})
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

    @staticmethod
    def _metadata_refusal(body: Any) -> web.Response | None:
        """An Antigravity login's metadata says it is Antigravity (`ideType` ANTIGRAVITY, or its
        enum number 9 as antigravity-claude-proxy sends it) with the Gemini plugin; Gemini CLI's
        IDE_UNSPECIFIED is another client's login. No public thread quotes Google's words for
        this refusal: the fake's are its own."""
        metadata = body.get("metadata") if isinstance(body, dict) else None
        if not isinstance(metadata, dict) or metadata.get("pluginType") not in ("GEMINI", 2):
            return web.json_response(
                google_error(400, "INVALID_ARGUMENT", "bad metadata"), status=400
            )
        if metadata.get("ideType") not in ("ANTIGRAVITY", 9):
            return web.json_response(
                google_error(
                    400,
                    "INVALID_ARGUMENT",
                    f"ideType {metadata.get('ideType')!r} is not an Antigravity client",
                ),
                status=400,
            )
        return None

    async def load_code_assist(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.load_bodies.append(body)
        refused = self._metadata_refusal(body)
        if refused is not None:
            return refused
        token = token_of(request)
        self.load_calls.append(token)
        if token in self.unprovisioned:
            # gemini-cli code_assist/setup.ts: no currentTier and no project until onboarding.
            return web.json_response(
                {
                    "allowedTiers": [
                        {"id": "free-tier", "name": "Antigravity", "isDefault": True},
                        {"id": "standard-tier", "name": "Standard"},
                    ]
                }
            )
        return web.json_response(
            {
                "currentTier": {"id": "standard-tier"},
                "cloudaicompanionProject": {"id": self.project},
            }
        )

    async def onboard_user(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.onboard_calls.append(body)
        refused = self._metadata_refusal(body)
        if refused is not None:
            return refused
        if body.get("tierId") != "free-tier":
            return web.json_response(
                google_error(400, "INVALID_ARGUMENT", "tierId must be an allowed tier"),
                status=400,
            )
        token = token_of(request)
        name = f"operations/onboard-{len(self.onboard_calls)}"
        self._operations[name] = (token, self.onboard_polls)
        return web.json_response(self._operation_state(name))

    async def operation(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        name = f"operations/{request.match_info['op']}"
        self.operation_reads.append(name)
        if name not in self._operations:
            return web.json_response(google_error(404, "NOT_FOUND", NOT_FOUND), status=404)
        token, left = self._operations[name]
        self._operations[name] = (token, left - 1)
        return web.json_response(self._operation_state(name))

    def _operation_state(self, name: str) -> dict[str, Any]:
        token, left = self._operations[name]
        if left > 0:
            return {"name": name, "done": False}
        if token in self.ineligible:
            return {"name": name, "done": True, "response": {}}
        self.unprovisioned.discard(token)
        return {
            "name": name,
            "done": True,
            "response": {"cloudaicompanionProject": {"id": self.project, "name": self.project}},
        }

    async def quota_read_by(self, token: str) -> None:
        """Returns once fetchAvailableModels was asked with `token` (a read the server starts
        by itself)."""
        async with self.quota_seen:
            await self.quota_seen.wait_for(lambda: any(t == token for t, _ in self.quota_reads))

    async def fetch_models(self, request: web.Request) -> web.Response:
        refused = self._unauthorized(request)
        if refused is not None:
            return refused
        body = await request.json()
        self.quota_reads.append((token_of(request), str(body.get("project"))))
        async with self.quota_seen:
            self.quota_seen.notify_all()
        if self.quota_status != 200:
            return web.json_response(
                google_error(self.quota_status, "RESOURCE_EXHAUSTED", "slow down", "30s"),
                status=self.quota_status,
            )
        models = dict(self.quota)
        for model, (_, stamp) in self.exhausted.items():
            # A spent model keeps only its reset time, as Google lists it.
            models[model] = dict(models.get(model) or {}, quotaInfo={"resetTime": stamp})
        return web.json_response({"models": models})

    # --- generation ----------------------------------------------------------------------------

    def _refusal(self, request: web.Request, body: dict[str, Any]) -> web.Response | None:
        def bad(message: str, code: int = 400, status: str = "INVALID_ARGUMENT") -> web.Response:
            return web.json_response(google_error(code, status, message), status=code)

        version = client_version(request.headers.get("User-Agent", ""))
        if version is None:
            return bad("unknown client")
        if version < MIN_CLIENT_VERSION:
            return bad(OUTDATED, 400, "FAILED_PRECONDITION")
        if not body.get("project"):
            # A login without a project (not yet onboarded) cannot generate at all.
            return bad("Permission denied on resource project .", 403, "PERMISSION_DENIED")
        if body.get("project") != self.project or token_of(request) in self.unprovisioned:
            return bad(
                f"Permission denied on project {body.get('project')!r}", 403, "PERMISSION_DENIED"
            )
        if body.get("userAgent") != "antigravity" or not str(body.get("requestId", "")).startswith(
            "agent-"
        ):
            return bad("bad envelope")
        if body.get("requestType") not in REQUEST_TYPES:
            return bad(f"Invalid value at 'request_type' ({body.get('requestType')!r})")
        if body.get("model") not in self.served:
            return bad(NOT_FOUND, 404, "NOT_FOUND")
        inner = body.get("request")
        if not isinstance(inner, dict) or not isinstance(inner.get("contents"), list):
            return bad("request.contents is required")
        if not isinstance(inner.get("sessionId"), str) or not inner["sessionId"]:
            return bad("request.session_id is required")
        if body["model"] in self.exhausted:
            delay, stamp = self.exhausted[body["model"]]
            return web.json_response(quota_exhausted_error(body["model"], delay, stamp), status=429)
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
