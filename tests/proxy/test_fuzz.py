"""A hypothesis fuzz of every route (R-FT-2, R-FT-3): arbitrary JSON bodies (deep nesting, lone
surrogates, NUL, huge numbers, wrong types), raw bodies, and header values of arbitrary bytes.

Whatever arrives, the answer is 2xx or 4xx or a protocol-shaped 5xx with a request id — never
a plain-text page — the server still serves afterwards, and no record is dropped.

The server runs on its own event loop in a thread, so hypothesis drives it with plain blocking
sockets, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sublane_desktop.service import Service
from tests.conftest import Harness, file_keyring
from tests.fake_codex import FakeCodex
from tests.fake_upstream import FakeAnthropic

MODEL_ROUTES = [
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/responses/compact",
]
ADMIN_ROUTES = [
    ("GET", "/api/accounts/runtime"),
    ("PATCH", "/api/accounts/1/limits"),
    ("POST", "/api/accounts/1/resume"),
    ("POST", "/llmux/pause-account"),
    ("POST", "/llmux/switch"),
    ("POST", "/llmux/reset-usage"),
    ("POST", "/api/accounts/refresh-quotas"),
    ("GET", "/api/settings"),
    ("PATCH", "/api/settings"),
    ("GET", "/api/requests"),
    ("GET", "/api/requests/filters"),
]
OTHER_ROUTES = [
    ("GET", "/v1/models"),
    ("GET", "/v1/responses"),
    ("GET", "/healthz"),
    ("GET", "/api/me/requests"),
    ("GET", "/api/me/requests/filters"),
    ("GET", "/nowhere"),
    ("DELETE", "/v1/messages"),
]
MODELS = [
    "claude-sonnet-4-5",
    "claude-fable-5[1m]",
    "anthropic/claude-haiku-4-5",
    "gpt-5.4",
    "codex/gpt-5.4",
    "o3",
    "gemini-2.5-pro",
    "llama",
]


class LiveServer:
    """A started service with fake upstreams on a loop of its own."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.tmp = tmp

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    async def start(self) -> None:
        self.anthropic, self.codex = FakeAnthropic(), FakeCodex()
        await self.anthropic.start()
        await self.codex.start()
        from sublane_desktop.accounts.secrets import SecretStore

        secrets = SecretStore(self.tmp, backend=file_keyring(self.tmp / "keyring.cfg"))
        self.service = Service(
            self.tmp / "data",
            port=0,
            secret_store=secrets,
            env={
                "SUBLANE_ANTHROPIC_BASE_URL": self.anthropic.url,
                "SUBLANE_CODEX_BASE_URL": self.codex.url,
                "SUBLANE_OPENAI_BASE_URL": self.codex.url,
                "SUBLANE_OAUTH_BASE_URL": self.anthropic.url,
            },
        )
        await self.service.start()
        await self.service.update_settings(
            {"upstream.header_timeout_s": 5, "upstream.idle_timeout_s": 5}
        )
        h = Harness(self.service, self.anthropic)
        await h.add_account("claude", "tok-claude", limit=8, api_key=True)  # any client
        await h.add_codex_account("gpt", "tok-gpt", limit=8)
        self.key = await h.create_key()
        self.url = self.service.endpoint_url

    async def stop(self) -> None:
        await self.service.stop(drain_timeout=2)
        await self.anthropic.stop()
        await self.codex.stop()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("fuzz"))
    server.run(server.start())
    yield server
    server.run(server.stop())
    server.loop.call_soon_threadsafe(server.loop.stop)
    server.thread.join(10)


def send(
    url: str, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes
) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        head = [f"{method} {path} HTTP/1.1".encode(), b"Host: " + parts.netloc.encode()]
        head += [name + b": " + value for name, value in headers]
        head += [b"Content-Length: %d" % len(body), b"Connection: close"]
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    found = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), found, rest


# --- strategies -----------------------------------------------------------------------------------

ODD = st.sampled_from(["\ud800", "\udfff", "\x00", "\ufeff", "\u202e", "\U0001f600", "🫠"])
TEXT = st.text(st.one_of(st.characters(), ODD), max_size=20)
NUMBER = st.one_of(st.integers(-(10**40), 10**40), st.floats(allow_nan=True, allow_infinity=True))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON_VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def deep(draw) -> object:
    value: object = draw(SCALAR)
    for _ in range(draw(st.integers(1, 200))):
        value = [value] if draw(st.booleans()) else {"k": value}
    return value


FIELD = st.one_of(JSON_VALUE, deep())


@st.composite
def body(draw) -> bytes:
    kind = draw(st.sampled_from(["shaped", "shaped", "any", "raw"]))
    if kind == "raw":
        return draw(st.binary(max_size=200))
    if kind == "any":
        return json.dumps(draw(st.one_of(JSON_VALUE, deep()))).encode()
    payload = {"model": draw(st.one_of(st.sampled_from(MODELS), FIELD))}
    for name in draw(
        st.lists(
            st.sampled_from(
                [
                    "messages",
                    "input",
                    "max_tokens",
                    "stream",
                    "system",
                    "tools",
                    "metadata",
                    "prompt_cache_key",
                    "account",
                    "paused",
                    "max_concurrency",
                    "pool.cap",
                    "upstream.idle_timeout_s",
                    "instructions",
                    "previous_response_id",
                ]
            ),
            max_size=5,
            unique=True,
        )
    ):
        payload[name] = draw(st.one_of(FIELD, st.just([{"role": "user", "content": "hi"}])))
    return json.dumps(payload).encode()


# Header values an HTTP/1.1 parser accepts (no CR/LF/NUL): anything else is not a request.
HEADER_VALUE = st.binary(max_size=40).map(
    lambda b: bytes(c for c in b if c == 9 or 32 <= c <= 126 or c >= 128).strip()
)
HEADER_NAMES = [
    b"session_id",
    b"session-id",
    b"x-claude-code-session-id",
    b"anthropic-beta",
    b"anthropic-version",
    b"content-type",
    b"origin",
    b"x-api-key",
    b"user-agent",
    b"x-codex-turn-state",
    b"chatgpt-account-id",
]


@st.composite
def request(draw, live) -> tuple[str, str, list[tuple[bytes, bytes]], bytes]:
    group = draw(st.sampled_from(["model", "model", "admin", "other"]))
    if group == "model":
        method, path = "POST", draw(st.sampled_from(MODEL_ROUTES))
    elif group == "admin":
        method, path = draw(st.sampled_from(ADMIN_ROUTES))
    else:
        method, path = draw(st.sampled_from(OTHER_ROUTES))
    credential = (live.service.admin_token if group == "admin" else live.key).encode()
    headers = [
        (
            b"content-type",
            draw(
                st.sampled_from(
                    [b"application/json", b"application/json; charset=utf-8", b"text/plain"]
                )
            ),
        )
    ]
    if draw(st.integers(0, 9)):  # mostly authenticated, sometimes not
        headers.append((b"authorization", b"Bearer " + credential))
    for name in draw(st.lists(st.sampled_from(HEADER_NAMES), max_size=3, unique=True)):
        headers.append((name, draw(HEADER_VALUE)))
    return method, path, headers, draw(body())


def assert_shaped(path: str, status: int, headers: dict[str, str], raw: bytes) -> None:
    assert status < 600, status
    if headers.get("content-type", "").startswith("text/event-stream"):
        assert status == 200
        return
    assert headers.get("content-type", "").startswith("application/json"), (status, raw[:200])
    payload = json.loads(raw)
    if status >= 400:
        # A request the HTTP parser refuses has no route yet: either shape is fine for it.
        anthropic_shape = payload.get("type") == "error"
        if path.startswith("/v1/messages") and status >= 500:
            assert anthropic_shape
        assert payload["error"]["type"] and payload["error"]["message"]
        assert anthropic_shape or set(payload["error"]) >= {"code", "param"}
        assert payload["request_id"].startswith("req_")
        # An upstream's own refusal (the fake refuses what Anthropic refuses, e.g. an empty
        # anthropic-version relayed as sent) reaches the client as the upstream wrote it, with
        # the upstream's request id, which the upstream-request-id header repeats; ours is
        # X-Request-ID either way.
        relayed = payload["request_id"] == headers.get("upstream-request-id")
        assert relayed or headers["x-request-id"] == payload["request_id"]


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_every_route_answers_in_shape_whatever_it_is_sent(live, data):
    method, path, headers, payload = data.draw(request(live))
    status, got, raw = send(live.url, method, path, headers, payload)
    event(f"{path} {status}")  # --hypothesis-show-statistics: what the fuzz reached
    assert_shaped(path, status, got, raw)
    health = send(live.url, "GET", "/healthz", [], b"")
    assert health[0] == 200 and json.loads(health[2])["records_dropped"] == 0


def test_the_server_still_serves_after_the_fuzz(live):
    live.run(
        live.service.update_settings(
            {"upstream.header_timeout_s": 120, "upstream.idle_timeout_s": 90, "pool.cap": 8}
        )
    )
    for account in list(live.service.pool.accounts.values()):
        live.run(live.service.pause(account.id, False))
        live.run(live.service.set_limit(account.id, 8))
        live.run(live.service.resume(account.id))
    live.run(live.service.flush_records())
    status, _, raw = send(
        live.url,
        "POST",
        "/v1/messages",
        [(b"content-type", b"application/json"), (b"x-api-key", live.key.encode())],
        json.dumps(
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "hi"}],
            }
        ).encode(),
    )
    assert status == 200, raw
    assert live.service.request_log.dropped == 0
    assert live.service.pool.in_flight == 0
