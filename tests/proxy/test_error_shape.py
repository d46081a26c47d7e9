"""One error shape, one Retry-After, strict mutations (SPEC §10: R-FT-3, R-FT-4, R-FT-5,
R-FT-10's sanitizer): what a client sees when something odd happens, on every route."""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest

from sublane_desktop.core.history import HistoryQuery
from tests.fake_codex import CodexReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.openai_helpers import records
from tests.raw_http import raw_request

CLAUDE = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
GPT_CHAT = {"model": "gpt-5.4", "messages": [{"role": "user", "content": "x"}]}


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_account(
        "claude", "tok-claude", api_key=True
    )  # serves any client (R-WF-2)
    await codex_harness.add_codex_account("gpt", "tok-gpt")
    return codex_harness, await codex_harness.create_key()


async def post(h, path, body, headers=None, *, data=None):
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + path, json=None if data is not None else body, data=data, headers=headers or {}
        ) as r:
            return r.status, r.headers, await r.read()


def assert_anthropic_shape(raw: bytes, status: int, code: str | None = None) -> dict:
    body = json.loads(raw)
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    assert isinstance(body["error"]["type"], str) and body["error"]["message"]
    if code:
        assert body["error"]["code"] == code
    return body


def assert_openai_shape(raw: bytes, code: str | None = None) -> dict:
    body = json.loads(raw)
    assert set(body["error"]) >= {"type", "code", "message", "param"}
    assert body["request_id"].startswith("req_")
    if code:
        assert body["error"]["code"] == code
    return body


# --- R-FT-3: the error middleware -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path, anthropic_shape",
    [
        ("/v1/messages", True),
        ("/v1/messages/count_tokens", True),
        ("/v1/chat/completions", False),
        ("/v1/responses", False),
        ("/v1/responses/compact", False),
    ],
)
async def test_an_internal_error_is_a_shaped_500_logged_once_without_secrets(
    ready, caplog, monkeypatch, path, anthropic_shape
):
    h, key = ready

    async def broken(_key):
        raise RuntimeError("boom sk-ant-oat01-SECRET")

    monkeypatch.setattr(h.service, "identify", broken)
    with caplog.at_level(logging.ERROR):
        status, headers, raw = await post(
            h, path, CLAUDE, {"x-api-key": key, **CLAUDE_CODE_HEADERS}
        )
    assert status == 500
    assert headers["Content-Type"].startswith("application/json")
    body = (
        assert_anthropic_shape(raw, 500, "internal_error")
        if anthropic_shape
        else assert_openai_shape(raw, "internal_error")
    )
    request_id = body["request_id"]
    assert headers["X-Request-ID"] == request_id
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert len(logged) == 1 and "RuntimeError" in logged[0].getMessage()
    assert "SECRET" not in caplog.text
    # Our own log lines carry no traceback. (Only ours: asyncio may log, into this test, the
    # traceback of a transport some earlier test left for the garbage collector.)
    ours = [r for r in caplog.records if r.name.startswith("sublane_desktop")]
    assert ours and not any(r.exc_info or "Traceback" in r.getMessage() for r in ours)


async def test_an_internal_error_inside_an_attempt_answers_with_its_record(ready, monkeypatch):
    """A bug after admission: the record says internal_error under the same request id, the
    slot comes back, and the account is not blamed for it."""
    h, key = ready

    def broken(account, headers):
        raise KeyError("x-secret-header")

    monkeypatch.setattr(h.service, "observe_headers", broken)
    status, _headers, raw = await post(
        h, "/v1/messages", CLAUDE, {"x-api-key": key, **CLAUDE_CODE_HEADERS}
    )
    assert status == 500
    body = assert_anthropic_shape(raw, 500, "internal_error")
    await h.service.flush_records()
    record = records(h)[-1]
    assert (record.request_id, record.outcome, record.error_code) == (
        body["request_id"],
        "error",
        "internal_error",
    )
    account = h.service.pool.accounts[record.account_id]
    assert account.in_flight == 0 and account.failure_streak == 0


async def test_unknown_paths_and_methods_answer_in_shape(ready):
    h, _ = ready
    async with aiohttp.ClientSession() as s:
        async with s.get(h.url + "/v1/nothing-here") as r:
            assert r.status == 404
            assert_openai_shape(await r.read(), "not_found")
        async with s.put(h.url + "/v1/messages", json={}) as r:
            assert r.status == 405
            assert_anthropic_shape(await r.read(), 405, "method_not_allowed")


@pytest.mark.parametrize("depth, status", [(63, None), (64, None), (65, 400), (3000, 400)])
async def test_json_nested_deeper_than_64_levels_is_400(ready, depth, status):
    h, key = ready
    # `depth` levels in all: the top-level object plus depth-1 nested lists
    nested = "[" * (depth - 1) + "]" * (depth - 1)
    body = json.dumps(CLAUDE)[:-1] + f', "metadata_extra": {nested}}}'
    got, _, raw = await post(
        h,
        "/v1/messages",
        None,
        {"x-api-key": key, **CLAUDE_CODE_HEADERS, "content-type": "application/json"},
        data=body.encode(),
    )
    if status is None:
        assert got == 200
    else:
        assert got == 400
        assert "nested deeper than 64" in assert_anthropic_shape(raw, 400)["error"]["message"]


async def test_a_bare_bracket_bomb_is_400_not_a_plain_text_500(ready):
    h, key = ready
    for path in ("/v1/messages", "/v1/chat/completions", "/v1/responses"):
        got, headers, raw = await post(
            h,
            path,
            None,
            {"x-api-key": key, **CLAUDE_CODE_HEADERS, "content-type": "application/json"},
            data=b"[" * 2048,
        )
        assert got == 400 and headers["Content-Type"].startswith("application/json")
        assert b"nested deeper" in raw
    assert h.service.pool.in_flight == 0


@pytest.mark.parametrize("header", [b"session_id", b"x-claude-code-session-id", b"session-id"])
async def test_a_session_header_that_is_not_utf8_is_ignored_for_affinity(ready, header):
    h, key = ready
    response = await raw_request(
        h.url,
        "POST",
        "/v1/messages",
        headers=[
            (b"x-api-key", key.encode()),
            (b"content-type", b"application/json"),
            (header, b"\xff\xfe-not-text"),
            (b"anthropic-beta", b"\xc3\x28"),
        ],
        body=json.dumps(CLAUDE).encode(),
    )
    assert response.status == 200, response.body
    assert h.service.pool.bindings == {}  # an independent request, not a conversation
    # the client's unreadable betas are dropped; the OAuth beta the account needs is still sent
    # the undecodable beta is dropped, and the API-key account needs none of its own
    assert "anthropic-beta" not in h.upstream.seen[-1].headers


@pytest.mark.parametrize("model", ["claude-sonnet-4-5\u0000", "claude-\ud800-sonnet"])
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions", "/v1/responses"])
async def test_a_model_string_sqlite_cannot_hold_is_refused_at_intake(ready, model, path):
    h, key = ready
    body = json.dumps({**CLAUDE, "model": model}).encode()  # \u escapes: valid JSON text
    got, _, raw = await post(
        h,
        path,
        None,
        {"x-api-key": key, **CLAUDE_CODE_HEADERS, "content-type": "application/json"},
        data=body,
    )
    assert got == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    assert h.upstream.seen == [] and records(h) == []


# --- R-FT-4: one Retry-After ----------------------------------------------------------------------


async def anthropic_429(h, reply_retry_after=None):
    h.upstream.script(
        None, Reply(status=429, error_type="rate_limit_error", retry_after=reply_retry_after)
    )


async def codex_429(h, reply_retry_after=None):
    h.codex.script(
        None,
        CodexReply(
            status=429,
            retry_after=reply_retry_after,
            error_body={"error": {"type": "rate_limit_exceeded", "message": "slow down"}},
        ),
    )


TRANSLATED = [
    ("/v1/chat/completions", {**GPT_CHAT, "model": "claude-sonnet-4-5"}, anthropic_429),
    ("/v1/chat/completions", GPT_CHAT, codex_429),
    ("/v1/messages", {**CLAUDE, "model": "gpt-5.4"}, codex_429),
    ("/v1/responses", {"model": "claude-sonnet-4-5", "input": "x"}, anthropic_429),
]


@pytest.mark.parametrize("path, body, script", TRANSLATED)
@pytest.mark.parametrize(
    "upstream_value, expected", [(None, 15), ("42", 42), ("-5", 15), ("soon", 15), ("99999999", 15)]
)
async def test_every_translated_429_carries_a_bounded_retry_after(
    ready, path, body, script, upstream_value, expected
):
    h, key = ready
    await script(h, upstream_value)
    status, headers, raw = await post(h, path, body, {"x-api-key": key, **CLAUDE_CODE_HEADERS})
    assert status == 429
    assert headers["Retry-After"] == str(expected)
    assert json.loads(raw)["request_id"] == headers["X-Request-ID"]


@pytest.mark.parametrize("status", [503, 529])
async def test_a_relayed_503_never_passes_a_broken_retry_after_through(ready, status):
    h, key = ready
    h.upstream.script(None, Reply(status=status, error_type="overloaded_error", retry_after="-5"))
    got, headers, _ = await post(
        h, "/v1/messages", CLAUDE, {"x-api-key": key, **CLAUDE_CODE_HEADERS}
    )
    assert got == status
    if status == 503:
        assert headers["Retry-After"] == "15"  # the ladder's first rung, not "-5"
    else:
        assert "Retry-After" not in headers


async def test_the_management_api_503_carries_retry_after(ready, monkeypatch):
    h, _ = ready
    monkeypatch.setattr(h.service, "admin_token", None)
    monkeypatch.setattr(h.service, "keyring_problem", "no keyring")
    async with (
        aiohttp.ClientSession() as s,
        s.get(h.url + "/api/accounts/runtime", headers={"Authorization": "Bearer x"}) as r,
    ):
        assert r.status == 503
        assert 1 <= int(r.headers["Retry-After"]) <= 300


async def test_the_websocket_error_event_of_a_codex_429_carries_the_ladder_wait(ready):
    h, key = ready
    await codex_429(h, "garbage")
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        await ws.send_str(
            json.dumps({"type": "response.create", "model": "gpt-5.4", "input": "hi"})
        )
        error = json.loads((await ws.receive()).data)
    assert error["type"] == "error" and error["status"] == 429
    assert error["headers"]["retry-after"] == "15"


async def test_a_websocket_message_nested_too_deep_is_an_error_event(ready):
    h, key = ready
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        await ws.send_str("[" * 5000)
        error = json.loads((await ws.receive()).data)
        assert error["type"] == "error" and error["status"] == 400
        assert "nested deeper" in error["message"]
        await ws.send_str(
            json.dumps({"type": "response.create", "model": "gpt-5.4", "input": "hi"})
        )
        first = json.loads((await ws.receive()).data)
        assert first["type"] == "response.created"  # the socket still serves


# --- R-FT-10: upstream error strings go through the one sanitizer ---------------------------------


async def test_an_upstream_error_type_is_sanitized_before_it_is_stored_or_shown(ready):
    h, key = ready
    h.codex.script(
        None,
        CodexReply(
            status=400,
            error_body={"error": {"type": "Bad thing: sk-ant-xyz secret here!", "message": "nope"}},
        ),
    )
    status, _, raw = await post(
        h, "/v1/chat/completions", GPT_CHAT, {"x-api-key": key, **CLAUDE_CODE_HEADERS}
    )
    assert status == 400 and b"sk-ant-xyz" not in raw
    await h.service.flush_records()
    record = records(h)[-1]
    assert record.error_code == "http_400"
    page = await h.service.request_log.page(HistoryQuery(), owner=None)
    assert "sk-ant" not in json.dumps(page)


# --- R-FT-5: strict mutations ---------------------------------------------------------------------


MUTATIONS = [
    ("POST", "/llmux/reset-usage"),
    ("POST", "/api/accounts/1/resume"),
    ("POST", "/api/accounts/refresh-quotas"),
    ("POST", "/llmux/switch"),
    ("POST", "/llmux/pause-account"),
    ("PATCH", "/api/accounts/1/limits"),
    ("PATCH", "/api/settings"),
]


@pytest.mark.parametrize("method, path", MUTATIONS)
@pytest.mark.parametrize(
    "ctype, data",
    [("text/plain", b"{}"), ("application/x-www-form-urlencoded", b"a=1"), (None, b"")],
)
async def test_every_mutation_requires_json(ready, method, path, ctype, data):
    h, _ = ready
    account = h.service.pool.accounts[1]
    account.cooldown_until = h.service.clock.now() + 60
    account.failure_streak = 1
    headers = {"Authorization": f"Bearer {h.service.admin_token}"}
    if ctype:
        headers["Content-Type"] = ctype
    async with aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as s:
        async with s.request(method, h.url + path, data=data, headers=headers) as r:
            assert r.status == 415, await r.text()
            assert_openai_shape(await r.read(), "unsupported_media_type")
    assert account.cooldown_until is not None  # resume did not run


async def test_a_json_mutation_without_a_body_is_accepted(ready):
    h, _ = ready
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + "/llmux/reset-usage",
            headers={
                "Authorization": f"Bearer {h.service.admin_token}",
                "Content-Type": "application/json",
            },
        ) as r:
            assert r.status == 200


@pytest.mark.parametrize(
    "origin, allowed",
    [
        ("http://127.0.0.1:{port}", True),
        ("http://localhost:{port}", True),
        ("http://[::1]:{port}", True),
        ("http://localhost:{other}", False),
        ("http://127.0.0.1:{other}", False),
        ("https://localhost:{port}", False),
        ("http://localhost", False),
        ("http://evil.localhost:{port}", False),
        ("null", False),
        ("http://localhost:{port}/path", False),
        ("garbage", False),
    ],
)
async def test_only_this_servers_exact_origin_may_mutate(ready, origin, allowed):
    h, _ = ready
    port = h.service.port
    origin = origin.format(port=port, other=port + 1 if port < 65535 else port - 1)
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + "/llmux/pause-account",
            json={"account": "claude"},
            headers={"Authorization": f"Bearer {h.service.admin_token}", "Origin": origin},
        ) as r:
            assert (r.status == 200) == allowed
            if not allowed:
                assert r.status == 403
                assert_openai_shape(await r.read(), "forbidden")
    assert h.service.pool.accounts[1].paused is allowed
