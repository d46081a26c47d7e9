"""How each way an upstream exchange can end reaches the client, the record and the account
(proxy/relay.py: R-REC-1, R-FT-1, R-FT-4, R-FT-10, R-ST-3, R-POOL-6, R-CF-1, R-LANE-7).

End to end through the relay on the fake upstreams and a fake clock: an answer streamed or
whole, an upstream error, a refreshed token, an upstream that sends no headers, falls silent,
drops the stream or cannot be reached, a credential that cannot be read, a client that leaves
or stops reading, a turn that spills or misses the cache. The fault timeouts are a fifth of a
second, so the whole file stays in the mutation run's fast selection; every client call has a
deadline of its own, so a relay that hangs fails the test instead of stalling it.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from email.utils import formatdate

import aiohttp
import pytest

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.cooldown import cooldown_seconds
from sublane_desktop.core.routing import route_model
from sublane_desktop.proxy import relay
from sublane_desktop.proxy.deadlines import deadlines
from tests.conftest import started_harness
from tests.fake_antigravity import AgReply, google_error
from tests.fake_codex import CodexReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply, never_accepting_url
from tests.openai_helpers import sse_frames as sse
from tests.openai_helpers import until
from tests.proxy.test_cache_forensics import turn

FAST = 0.2  # seconds: the upstream timeouts the fault tests run under
DEADLINE = 5.0  # seconds: the client's own limit on any one call
ASK = [{"role": "user", "content": "hi"}]
CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": ASK}


@pytest.fixture
async def desk(tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store):
    """A started service on all three fakes and a fake clock, with a client key (`h.key`)."""
    async with started_harness(
        tmp_path,
        secret_store,
        upstream,
        codex=codex_upstream,
        google=antigravity_upstream,
        clock=FakeClock(),
    ) as h:
        h.key = await h.create_key()
        yield h


async def fast_timeouts(h, **overrides: float) -> None:
    settings = {
        "upstream.connect_timeout_s": FAST,
        "upstream.header_timeout_s": FAST,
        "upstream.idle_timeout_s": FAST,
    }
    settings.update({f"upstream.{k}_s": v for k, v in overrides.items()})
    await h.service.update_settings(settings)


async def post(h, path: str, body: dict, headers: dict | None = None):
    """(status, response headers, body bytes) of one POST, under the client's deadline."""
    timeout = aiohttp.ClientTimeout(total=DEADLINE)
    async with aiohttp.ClientSession(timeout=timeout) as s:
        async with s.post(
            h.url + path,
            json=body,
            headers={"x-api-key": h.key, **CLAUDE_CODE_HEADERS, **(headers or {})},
        ) as r:
            return r.status, r.headers, await r.read()


async def last_record(h):
    await h.service.flush_records()
    return h.service.records[-1]


def account(h, account_id):
    return h.service.pool.accounts[account_id]


def assert_cooled(h, account_id, streak: int = 1) -> None:
    acc = account(h, account_id)
    assert acc.failure_streak == streak
    assert acc.cooldown_until is not None and acc.cooldown_until > h.service.clock.now()
    assert acc.in_flight == 0 and h.service.pool.in_flight == 0


def assert_not_blamed(h, account_id) -> None:
    acc = account(h, account_id)
    assert acc.failure_streak == 0 and acc.cooldown_until is None and not acc.auth_failed
    assert acc.in_flight == 0 and h.service.pool.in_flight == 0


# --- answers ---------------------------------------------------------------------------------------


async def test_a_streamed_answer_is_relayed_and_recorded_whole_with_its_duration(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    call = asyncio.ensure_future(post(h, "/v1/messages", {**CLAUDE, "stream": True}))
    await until(h.upstream.started.is_set, "the upstream stream")
    h.clock.advance(1.5)  # the stream is held open for 1.5 s of the service's clock
    gate.set()
    status, headers, raw = await call
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Cache-Control"] == "no-cache"
    assert headers["upstream-request-id"] == "req_upstream_1"
    frames = sse(raw)
    assert frames[0][0] == "message_start" and frames[-1][0] == "message_stop"
    record = await last_record(h)
    identity = await h.service.identify(h.key)
    assert record.request_id == headers["X-Request-ID"]
    assert (record.user_id, record.key_id, record.group_id) == (
        identity.user_id,
        identity.key_id,
        identity.group_id,
    )
    assert (record.provider, record.model, record.protocol, record.operation) == (
        "anthropic",
        "claude-sonnet-4-5",
        "anthropic",
        "messages",
    )
    assert record.started_at == 1_800_000_000.0  # the fake clock when the request came in
    assert (record.account_id, record.upstream_status) == (claude, 200)
    assert (record.outcome, record.error_code) == ("success", None)
    # 12 new + 30 read from the cache + 8 written to it; 7 out
    assert (record.input_tokens, record.cached_tokens, record.output_tokens) == (50, 30, 7)
    assert record.duration_ms == 1500
    assert_not_blamed(h, claude)


async def test_an_answered_request_leaves_no_header_deadline_behind(desk):
    # A deadline left in the loop's table after its request ended would fire into a finished
    # timeout later (and stop that pass from expiring anyone else's), and the table would
    # grow by one entry per request.
    h = desk
    await h.add_account("claude", "tok-claude")
    for body in (CLAUDE, {**CLAUDE, "stream": True}):
        status, _, _ = await post(h, "/v1/messages", body)
        assert status == 200
        assert len(deadlines()) == 0


async def test_a_whole_answer_of_many_chunks_arrives_intact(desk):
    h = desk
    await h.add_account("claude", "tok-claude")
    text = "many words " * 40_000  # ~440 kB: read in many chunks
    h.upstream.script(None, Reply(kind="json", text=text))
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 200 and headers["X-Request-ID"].startswith("req_")
    assert json.loads(raw)["content"][0]["text"] == text
    record = await last_record(h)
    assert (record.outcome, record.input_tokens, record.output_tokens) == ("success", 50, 7)


async def test_a_stream_that_ends_before_its_last_event_says_so_to_a_translated_client(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    h.codex.script(None, CodexReply(terminal="none"), CodexReply(terminal="none"))
    body = {"model": "gpt-5.4", "messages": ASK, "stream": True}
    status, _, raw = await post(h, "/v1/chat/completions", body)
    assert status == 200
    frames = sse(raw)
    assert frames[-1][1]["error"]["message"] == "the upstream stream ended before its last event"
    assert (None, "[DONE]") not in frames
    h.clock.advance(3600)  # past the cooldown the broken stream earned
    status, _, raw = await post(h, "/v1/chat/completions", dict(body, stream=False))
    assert status == 502
    error = json.loads(raw)["error"]
    assert error["message"] == "the upstream stream ended before its last event"
    record = await last_record(h)
    assert record.outcome == "incomplete" and record.account_id == gpt


# --- upstream errors -------------------------------------------------------------------------------


async def test_a_429_with_a_dated_retry_after_is_relayed_bounded_and_rests_the_account(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    when = formatdate(h.service.clock.now() + 120, usegmt=True)
    h.upstream.script(None, Reply(status=429, error_type="rate_limit_error", retry_after=when))
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 429 and headers["Retry-After"] == "120"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    record = await last_record(h)
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "rate_limit_error",
        429,
    )
    assert_cooled(h, claude)
    assert account(h, claude).cooldown_until == h.service.clock.now() + 120


async def test_a_second_429_in_a_row_tells_the_client_the_next_rung_of_the_ladder(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    h.upstream.script(None, Reply(status=429), Reply(status=429))
    status, headers, _ = await post(h, "/v1/messages", CLAUDE)
    assert (status, headers["Retry-After"]) == (429, str(int(cooldown_seconds(1))))
    h.clock.advance(cooldown_seconds(1) + 1)
    status, headers, _ = await post(h, "/v1/messages", CLAUDE)
    assert (status, headers["Retry-After"]) == (429, str(int(cooldown_seconds(2))))
    assert_cooled(h, claude, streak=2)


async def test_an_error_type_that_is_not_a_code_is_recorded_by_its_status(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    h.upstream.script(None, Reply(status=500, error_type="Something broke: see logs!"))
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 500
    record = await last_record(h)
    assert (record.outcome, record.error_code, record.upstream_status) == ("error", "http_500", 500)
    assert_cooled(h, claude)
    h.clock.advance(3600)
    h.upstream.script(None, Reply(status=400, error_type="invalid_request_error"))
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "invalid_request_error")
    assert account(h, claude).failure_streak == 1  # the client's mistake: no new blame


async def test_a_translated_error_type_that_is_prose_reaches_neither_record_nor_client(desk):
    h = desk
    await h.add_codex_account("gpt", "tok-gpt")
    prose = {"error": {"type": "you broke it (see https://x)", "message": "scripted"}}
    h.codex.script(None, CodexReply(kind="error", status=500, error_body=prose))
    status, _, raw = await post(h, "/v1/chat/completions", {"model": "gpt-5.4", "messages": ASK})
    assert status == 500
    assert "broke" not in raw.decode()
    record = await last_record(h)
    assert (record.error_code, record.upstream_status) == ("http_500", 500)


async def test_a_spent_codex_window_rests_the_account_until_it_resets(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    spent = {"error": {"type": "usage_limit_reached", "message": "x", "resets_in_seconds": 4000}}
    h.codex.script(None, CodexReply(kind="error", status=429, error_body=spent))
    status, headers, _ = await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert status == 429 and headers["Retry-After"] == "300"  # bounded for the client
    record = await last_record(h)
    assert (record.error_code, record.upstream_status) == ("usage_limit_reached", 429)
    # a quota 429: held until the reset it named, not the ladder's 15-minute cap (R-OBS-3)
    assert account(h, gpt).cooldown_until == h.service.clock.now() + 4000
    assert h.service.account_view(gpt)["hold"]["kind"] == "quota"
    # a 429 that is not a spent window rests the account on the ladder only
    h.clock.advance(4001)
    plain = {"error": {"type": "rate_limit_exceeded", "message": "x", "resets_in_seconds": 4000}}
    h.codex.script(None, CodexReply(kind="error", status=429, error_body=plain))
    await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert account(h, gpt).cooldown_until == h.service.clock.now() + cooldown_seconds(2)


async def test_a_google_429_rests_the_account_for_its_retry_delay(desk):
    h = desk
    google = await h.add_antigravity_account("google")
    busy = google_error(429, "RESOURCE_EXHAUSTED", "slow down", "90s")
    h.google.script(AgReply(kind="error", status=429, error_body=busy))
    body = {"model": "gemini-3-flash", "messages": ASK}
    status, headers, _ = await post(h, "/v1/chat/completions", body)
    assert status == 429 and headers["Retry-After"] == "90"
    record = await last_record(h)
    assert (record.error_code, record.upstream_status) == ("resource_exhausted", 429)
    assert account(h, google).cooldown_until == h.service.clock.now() + 90
    # a refusal that is the client's (400) carries no wait and blames nobody
    h.clock.advance(100)
    bad = google_error(400, "INVALID_ARGUMENT", "no", "90s")
    h.google.script(AgReply(kind="error", status=400, error_body=bad))
    status, headers, _ = await post(h, "/v1/chat/completions", body)
    assert status == 400 and "Retry-After" not in headers
    assert (await last_record(h)).error_code == "invalid_argument"
    # a Google error without a status is recorded by its HTTP status
    h.google.script(AgReply(kind="error", status=400, error_body={"error": {"message": "no"}}))
    await post(h, "/v1/chat/completions", body)
    assert (await last_record(h)).error_code == "http_400"
    assert account(h, google).failure_streak == 1


# --- credentials -----------------------------------------------------------------------------------


async def test_an_expired_token_is_refreshed_once_and_the_request_sent_again(desk):
    h = desk
    claude = await h.add_account("claude", "tok-old")
    h.upstream.expired.add("tok-old")
    h.upstream.refresh_grants["rt-claude"] = ("tok-new", "rt-new")
    status, _, _ = await post(h, "/v1/messages", CLAUDE)
    assert status == 200
    assert h.upstream.tokens_served() == ["tok-old", "tok-new"]
    assert (await last_record(h)).outcome == "success"
    assert_not_blamed(h, claude)


async def test_a_refused_api_key_is_not_refreshed_and_marks_the_account(desk):
    h = desk
    plain = await h.add_account("plain", "sk-ant-api-1", api_key=True)
    h.upstream.expired.add("sk-ant-api-1")
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 401 and json.loads(raw)["error"]["type"] == "authentication_error"
    assert h.upstream.refresh_calls == [] and h.upstream.tokens_served() == ["sk-ant-api-1"]
    assert account(h, plain).auth_failed


async def test_a_403_is_an_expired_token_for_google_and_a_refusal_for_anthropic(desk):
    h = desk
    google = await h.add_antigravity_account("google", "ya29.old")
    h.google.refresh_tokens["1//rt-google"] = "ya29.new"
    denied = google_error(403, "PERMISSION_DENIED", "token no good")
    h.google.script(AgReply(kind="error", status=403, error_body=denied))
    body = {"model": "gemini-3-flash", "messages": ASK}
    status, _, _ = await post(h, "/v1/chat/completions", body)
    assert status == 200
    assert [s.token for s in h.google.seen] == ["ya29.old", "ya29.new"]
    assert_not_blamed(h, google)
    # twice refused: a real auth failure
    h.google.script(
        AgReply(kind="error", status=403, error_body=denied),
        AgReply(kind="error", status=403, error_body=denied),
    )
    status, _, _ = await post(h, "/v1/chat/completions", body)
    assert status == 403 and account(h, google).auth_failed

    claude = await h.add_account("claude", "tok-claude")
    h.upstream.script(None, Reply(status=403, error_type="permission_error"))
    status, _, _ = await post(h, "/v1/messages", CLAUDE)
    assert status == 403
    assert h.upstream.refresh_calls == [] and h.upstream.tokens_served() == ["tok-claude"]
    assert_not_blamed(h, claude)


async def test_an_unreadable_credential_is_a_503_recorded_without_upstream_traffic(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    await h.service.secrets.aset(account_secret(claude), "not json")
    h.service.credentials.forget(claude)
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 503
    error = json.loads(raw)
    assert error["error"]["code"] == "auth_failed"
    # the account, what is wrong and the fix, in words (R-LOGIN-4)
    assert error["error"]["message"].startswith(
        "account claude: the stored credential could not be read; sign in again"
    )
    assert "not json" not in error["error"]["message"]
    assert error["request_id"] == headers["X-Request-ID"]
    record = await last_record(h)
    assert (record.outcome, record.error_code, record.account_id) == (
        "error",
        "credential_unavailable",
        claude,
    )
    assert h.upstream.seen == []
    acc = account(h, claude)  # our storage's fault, not the upstream's: no cooldown
    assert (acc.failure_streak, acc.cooldown_until, acc.in_flight) == (0, None, 0)


async def test_a_google_login_without_a_project_is_a_502_that_says_why(desk):
    h = desk
    await h.add_antigravity_account("google", project=None)
    h.google.project = None
    body = {"model": "gemini-3-flash", "messages": ASK}
    status, _, raw = await post(h, "/v1/chat/completions", body)
    assert status == 502
    error = json.loads(raw)["error"]
    assert error["code"] == "upstream_error"
    assert error["message"].startswith(
        "account google: Google gave this login no Code Assist project"
    )
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "project_unknown")


# --- faults: no headers, silence, a dropped stream, no upstream at all -----------------------------


async def test_an_upstream_that_sends_no_headers_is_a_504_on_the_header_clock(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    await fast_timeouts(h, connect_timeout=2.0)  # a generous connect allowance adds nothing
    h.upstream.script(None, Reply(kind="hang"))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 504 and loop.time() - t0 < 1.5
    error = json.loads(raw)
    assert error["error"]["code"] == "upstream_timeout"
    assert error["error"]["message"] == (
        "the upstream for account claude sent no answer within 0.2s"
    )
    assert error["request_id"] == headers["X-Request-ID"]
    record = await last_record(h)
    assert record.request_id == error["request_id"]  # the answer quotes the record's id
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "upstream_timeout",
        None,
    )
    assert_cooled(h, claude)


async def test_an_upstream_that_refuses_connections_is_a_502_unreachable(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    h.service.env["SUBLANE_ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 502
    error = json.loads(raw)["error"]
    assert (error["code"], error["message"]) == (
        "upstream_unreachable",
        "could not reach the upstream for account claude",
    )
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "upstream_unreachable")
    assert_cooled(h, claude)


async def test_an_upstream_that_never_accepts_is_unreachable_within_the_connect_timeout(desk):
    """A port whose accept queue is full takes no new connection: connecting hangs, and the
    connect limit, not the header limit, ends it."""
    h = desk
    await h.add_account("claude", "tok-claude")
    await fast_timeouts(h, header_timeout=3.0)
    with never_accepting_url() as url:
        h.service.env["SUBLANE_ANTHROPIC_BASE_URL"] = url
        status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 502 and json.loads(raw)["error"]["code"] == "upstream_unreachable"


@pytest.mark.parametrize("kind", ["json_stall", "mute"])
async def test_a_whole_body_that_falls_silent_is_a_504(desk, kind):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    await fast_timeouts(h)
    h.upstream.script(None, Reply(kind=kind))
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 504
    error = json.loads(raw)["error"]
    assert (error["code"], error["message"]) == (
        "upstream_timeout",
        "the upstream fell silent for 0.2s",
    )
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("incomplete", "upstream_timeout")
    assert_cooled(h, claude)


@pytest.mark.parametrize(
    ("kind", "code", "message", "recorded"),
    [
        ("stall", "upstream_timeout", "the upstream fell silent for 0.2s", "incomplete"),
        ("mute", "upstream_timeout", "the upstream fell silent for 0.2s", "incomplete"),
        ("drop", "upstream_error", "upstream connection lost", "error"),
    ],
)
async def test_a_stream_that_falls_silent_or_drops_ends_with_an_error_event_and_blames_it(
    desk, kind, code, message, recorded
):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    await fast_timeouts(h)
    h.upstream.script(None, Reply(kind=kind))
    status, _, raw = await post(h, "/v1/messages", {**CLAUDE, "stream": True})
    assert status == 200
    name, error = sse(raw)[-1]
    assert name == "error"
    assert error["error"] == {"type": "api_error", "code": code, "message": message}
    record = await last_record(h)
    stored_code = "upstream_dropped" if kind == "drop" else "upstream_timeout"
    assert (record.outcome, record.error_code) == (recorded, stored_code)
    # The first token's time is kept only where a token came: "stall" sent one delta, "drop"
    # only message_start (no token, however early it came), "mute" nothing.
    assert (record.first_token_ms is not None) == (kind == "stall")
    assert_cooled(h, claude)


async def test_a_translated_stream_that_falls_silent_ends_in_the_clients_shape(desk):
    h = desk
    await h.add_codex_account("gpt", "tok-gpt")
    await fast_timeouts(h)
    h.codex.script(None, CodexReply(kind="stall"))
    body = {"model": "gpt-5.4", "messages": ASK, "stream": True}
    status, _, raw = await post(h, "/v1/chat/completions", body)
    assert status == 200
    error = sse(raw)[-1][1]["error"]
    assert (error["code"], error["message"]) == (
        "upstream_timeout",
        "the upstream fell silent for 0.2s",
    )


async def test_a_whole_body_the_upstream_drops_is_a_502(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    h.codex.script(None, CodexReply(kind="drop"))
    status, _, raw = await post(h, "/v1/chat/completions", {"model": "gpt-5.4", "messages": ASK})
    assert status == 502
    error = json.loads(raw)["error"]
    assert (error["code"], error["message"]) == ("upstream_error", "upstream connection lost")
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "upstream_dropped")
    assert_cooled(h, gpt)


# --- the client side -------------------------------------------------------------------------------


async def test_a_client_that_leaves_mid_stream_is_recorded_canceled_and_blames_nobody(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    async with aiohttp.ClientSession() as s:
        response = await s.post(
            h.url + "/v1/messages",
            json={**CLAUDE, "stream": True},
            headers={"x-api-key": h.key, **CLAUDE_CODE_HEADERS},
        )
        assert response.status == 200
        await response.content.readline()  # the stream has begun
        response.close()  # the client goes away
    await until(lambda: len(h.service.records) == 1, "the attempt's record")
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("canceled", "client_disconnected")
    await until(lambda: h.upstream.cancelled == 1, "the upstream request cancelled too")
    assert_not_blamed(h, claude)
    gate.set()


async def test_a_client_that_stops_reading_is_let_go_after_the_stall_bound(desk, monkeypatch):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    monkeypatch.setattr(relay, "WRITE_STALL_SECONDS", 0.2)
    # far more than the socket buffers hold between the proxy and a client that reads nothing
    h.upstream.script(None, Reply(kind="sse", text="x" * 24_000_000, events=200))
    host, port = h.url.removeprefix("http://").split(":")
    _reader, writer = await asyncio.open_connection(host, int(port))  # it never reads
    body = json.dumps({**CLAUDE, "stream": True}).encode()
    writer.write(
        f"POST /v1/messages HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + b"User-Agent: claude-cli/2.1.197 (external, cli)\r\nx-app: cli\r\n"
        + f"x-api-key: {h.key}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    try:
        await until(lambda: len(h.service.records) == 1, "the stalled attempt's record", DEADLINE)
    finally:
        writer.close()
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("canceled", "client_stalled")
    assert_not_blamed(h, claude)


# --- admission ---------------------------------------------------------------------------------------


async def test_a_refused_bound_turn_is_recorded_against_the_account_that_said_no(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    session = {"x-claude-code-session-id": "sess-relay"}
    h.upstream.script(None, Reply(status=529, error_type="overloaded_error"))
    status, _, _ = await post(h, "/v1/messages", CLAUDE, session)
    assert status == 529  # the account that serves the conversation now rests
    status, headers, raw = await post(h, "/v1/messages", CLAUDE, session)
    assert status == 429
    error = json.loads(raw)
    assert error["request_id"] == headers["X-Request-ID"]
    record = await last_record(h)
    assert record.request_id == headers["X-Request-ID"]
    assert (record.outcome, record.error_code) == ("rejected", error["error"]["code"])
    assert record.account_id == claude
    assert record.duration_ms == 0


async def test_a_full_global_cap_answers_429_and_keeps_no_record(desk):
    h = desk
    await h.add_account("claude", "tok-claude", limit=4)
    await h.service.update_settings({"pool.cap": 1})
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    held = asyncio.ensure_future(post(h, "/v1/messages", {**CLAUDE, "stream": True}))
    await until(h.upstream.started.is_set, "the first request upstream")
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 429 and json.loads(raw)["error"]["code"] == "capacity_exhausted"
    assert json.loads(raw)["request_id"] == headers["X-Request-ID"]
    gate.set()
    await held
    await h.service.flush_records()
    assert [r.outcome for r in h.service.records] == ["success"]


async def test_a_claude_turn_that_spills_is_recorded_as_the_serving_providers(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    google = await h.add_antigravity_account("google")
    await h.service.pause(claude)
    status, _, raw = await post(h, "/v1/messages", dict(CLAUDE, model="claude-sonnet-4-6"))
    assert status == 200 and json.loads(raw)["content"][0]["text"]
    assert h.google.seen[-1].body["model"] == "claude-sonnet-4-6"
    record = await last_record(h)
    assert (record.provider, record.account_id, record.outcome) == (
        "antigravity",
        google,
        "success",
    )
    # a conversation spilled once stays where it was served
    session = {"x-claude-code-session-id": "sess-spill"}
    for _ in range(2):
        status, _, _ = await post(
            h, "/v1/messages", dict(CLAUDE, model="claude-sonnet-4-6"), session
        )
        assert status == 200
    assert (await last_record(h)).provider == "antigravity"


async def test_only_an_unbound_request_carries_a_fresh_correlation_id_upstream(desk):
    h = desk
    await h.add_account("claude", "tok-claude")
    await post(h, "/v1/messages", CLAUDE)
    await post(h, "/v1/messages", CLAUDE)
    first, second = (s.headers.get("x-client-request-id") for s in h.upstream.seen)
    assert re.fullmatch("[0-9a-f]{32}", first) and re.fullmatch("[0-9a-f]{32}", second)
    assert first != second
    await post(h, "/v1/messages", CLAUDE, {"x-claude-code-session-id": "sess-bound"})
    assert "x-client-request-id" not in h.upstream.seen[-1].headers


async def test_an_internal_error_is_recorded_as_ours_with_the_request_id(desk, monkeypatch):
    h = desk
    claude = await h.add_account("claude", "tok-claude")

    def broken(account, headers):
        raise KeyError("boom")

    monkeypatch.setattr(h.service, "observe_headers", broken)
    status, headers, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 500
    assert json.loads(raw)["request_id"] == headers["X-Request-ID"]
    record = await last_record(h)
    assert record.request_id == headers["X-Request-ID"]
    assert (record.outcome, record.error_code) == ("error", "internal_error")
    assert_not_blamed(h, claude)


# --- quota and Fable -------------------------------------------------------------------------------


async def test_codex_quota_headers_feed_the_gauges_of_the_serving_account(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    h.codex.usage_for["*"] = 429  # no poll: only the answer's headers can feed the gauge
    status, _, _ = await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert status == 200
    gauges = account(h, gpt).gauges
    await until(lambda: not gauges.five_hour.cold, "the header-fed 5h gauge")


async def test_a_model_scoped_fable_429_rests_only_the_fable_bucket(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    fable = {**CLAUDE, "model": "claude-fable-5"}
    h.upstream.script(None, Reply(status=429))
    status, headers, _ = await post(h, "/v1/messages", fable)
    assert (status, headers["Retry-After"]) == (429, str(int(cooldown_seconds(1))))
    acc = account(h, claude)
    assert (acc.fable_streak, acc.failure_streak) == (1, 0)
    # corroborated by the 5h window, or with its own wait, it rests the whole account
    h.clock.advance(3600)
    rejected = {"anthropic-ratelimit-unified-5h-status": "rejected"}
    h.upstream.script(None, Reply(status=429, headers=rejected))
    await post(h, "/v1/messages", fable)
    assert acc.failure_streak == 1
    h.clock.advance(3600)
    h.upstream.script(None, Reply(status=429, retry_after="60"))
    await post(h, "/v1/messages", fable)
    assert acc.failure_streak == 2
    # a 429 on another model is the account's, whatever its headers say
    h.clock.advance(3600)
    h.upstream.script(None, Reply(status=429))
    await post(h, "/v1/messages", CLAUDE)
    assert acc.failure_streak == 3


# --- cache forensics -------------------------------------------------------------------------------


async def test_a_turn_moved_off_its_warm_account_is_an_account_switch_with_its_cost(desk):
    h = desk
    await h.add_account("work", "tok-work")
    await h.add_account("lab", "tok-lab")
    session = {"x-claude-code-session-id": "sess-cache"}
    body = {**CLAUDE, "stream": True}
    h.upstream.script(None, turn(40_000, 0, 40_000), turn(41_000, 0, 41_000))
    await post(h, "/v1/messages", body, session)
    first = await last_record(h)
    assert (first.cache_miss, first.reread_tokens) == ("first_turn", 0)
    h.clock.advance(0.4)
    await h.service.pause(first.account_id)
    await post(h, "/v1/messages", body, session)
    second = await last_record(h)
    assert second.account_id != first.account_id
    assert (second.cache_miss, second.reread_tokens) == ("account_switch", 40_000)
    assert (second.previous_account_id, second.idle_seconds) == (first.account_id, 0.4)
    # an unbound request has no turn to compare
    await post(h, "/v1/messages", body)
    assert ((await last_record(h)).cache_miss, (await last_record(h)).reread_tokens) == (
        None,
        None,
    )


async def test_a_one_hour_cache_is_still_warm_after_ten_minutes(desk):
    h = desk
    await h.add_account("work", "tok-work")
    session = {"x-claude-code-session-id": "sess-hour"}
    system = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    hour = [dict(system[0], cache_control={"type": "ephemeral", "ttl": "1h"})]
    h.upstream.script(
        None,
        turn(30_000, 0, 30_000),
        turn(30_500, 0, 30_500),
        turn(31_000, 0, 31_000),
        turn(31_500, 0, 31_500),
    )
    await post(h, "/v1/messages", {**CLAUDE, "system": hour}, session)
    h.clock.advance(600)
    await post(h, "/v1/messages", {**CLAUDE, "system": hour}, session)
    assert (await last_record(h)).cache_miss == "prefix_changed"  # not expired: 1 h
    h.clock.advance(600)
    await post(h, "/v1/messages", {**CLAUDE, "system": system}, session)
    h.clock.advance(600)
    await post(h, "/v1/messages", {**CLAUDE, "system": system}, session)
    assert (await last_record(h)).cache_miss == "ttl_expired"  # the 5-minute default


# --- the upstream request each route builds ---------------------------------------------------------


async def test_a_chat_request_for_claude_goes_to_the_messages_endpoint_with_its_betas(desk):
    h = desk
    await h.add_account("claude", "tok-claude", api_key=True)  # any client (R-WF-2)
    h.service.env["SUBLANE_ANTHROPIC_BASE_URL"] = h.upstream.url + "/"  # a trailing slash
    for model, long_context in (("claude-sonnet-4-5", False), ("claude-sonnet-4-5[1m]", True)):
        status, _, raw = await post(h, "/v1/chat/completions", {"model": model, "messages": ASK})
        assert status == 200
        assert json.loads(raw)["choices"][0]["message"]["content"]
        seen = h.upstream.seen[-1]
        assert (seen.path, seen.query, seen.body["model"]) == (
            "/v1/messages",
            "",
            "claude-sonnet-4-5",
        )
        betas = seen.headers.get("anthropic-beta", "")  # an API key needs no beta of its own
        assert ("context-1m-2025-08-07" in betas) is long_context


async def test_a_compaction_goes_to_the_compact_endpoint_as_one_json_exchange(desk):
    h = desk
    await h.add_codex_account("gpt", "tok-gpt")
    status, _, _ = await post(h, "/v1/responses/compact", {"model": "gpt-5.4", "input": []})
    assert status == 200
    seen = h.codex.seen[-1]
    assert seen.path == "/responses/compact"
    assert seen.headers["Accept"] == "application/json"
    assert seen.body["model"] == "gpt-5.4" and "stream" not in seen.body
    status, _, _ = await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert h.codex.seen[-1].path == "/responses"
    assert h.codex.seen[-1].headers["Accept"] == "text/event-stream"


async def test_an_account_with_its_own_base_url_is_served_there(desk):
    h = desk
    await h.add_codex_account("own", "sk-own", api_key=True, base_url=h.codex.url + "/v1/")
    h.service.env["SUBLANE_OPENAI_BASE_URL"] = "http://127.0.0.1:9"  # not where it goes
    status, _, _ = await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert status == 200
    assert (h.codex.seen[-1].path, h.codex.seen[-1].token) == ("/v1/responses", "sk-own")


async def test_an_antigravity_account_with_its_own_base_url_is_served_there(desk):
    h = desk
    await h.add_antigravity_account("own", base_url=h.google.url + "/")
    h.service.env["SUBLANE_ANTIGRAVITY_BASE_URL"] = "http://127.0.0.1:9"  # not where it goes
    body = {"model": "gemini-3-flash", "messages": ASK}
    status, _, _ = await post(h, "/v1/chat/completions", body)
    assert status == 200
    assert h.google.seen[-1].path == "/v1internal:generateContent"


async def test_an_antigravity_stream_uses_the_streaming_method(desk):
    h = desk
    await h.add_antigravity_account("google")
    body = {"model": "gemini-3-flash", "messages": ASK, "stream": True}
    status, _, raw = await post(h, "/v1/chat/completions", body)
    assert status == 200 and sse(raw)[-1] == (None, "[DONE]")
    assert h.google.seen[-1].path == "/v1internal:streamGenerateContent?alt=sse"


async def test_one_session_on_a_claude_and_a_gpt_model_is_bound_once_per_provider(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    session = {"x-claude-code-session-id": "sess-both"}
    for model, served in (
        ("claude-sonnet-4-5", claude),
        ("gpt-5.4", gpt),
        ("claude-sonnet-4-5", claude),
    ):
        status, _, _ = await post(h, "/v1/messages", {**CLAUDE, "model": model}, session)
        assert status == 200
        record = await last_record(h)
        assert (record.account_id, record.provider) == (served, account(h, served).provider)


async def test_a_translated_stream_the_upstream_drops_ends_with_an_upstream_error_chunk(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    h.codex.script(None, CodexReply(kind="drop"))
    body = {"model": "gpt-5.4", "messages": ASK, "stream": True}
    status, headers, raw = await post(h, "/v1/chat/completions", body)
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["Cache-Control"] == "no-cache"
    error = sse(raw)[-1][1]["error"]
    assert (error["code"], error["message"]) == ("upstream_error", "upstream connection lost")
    assert_cooled(h, gpt)


async def test_a_whole_pass_through_body_the_upstream_drops_is_a_502(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    h.upstream.script(None, Reply(kind="json_drop"))
    status, _, raw = await post(h, "/v1/messages", CLAUDE)
    assert status == 502
    error = json.loads(raw)["error"]
    assert (error["code"], error["message"]) == ("upstream_error", "upstream connection lost")
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "upstream_dropped")
    assert_cooled(h, claude)


class _GoneClient:
    """A client response whose connection is already gone: every write fails as aiohttp's do."""

    def write(self, data: bytes):
        raise ConnectionResetError("gone")

    def write_eof(self):
        raise ConnectionResetError("gone")


async def test_a_write_to_a_client_that_is_gone_says_whether_it_left_or_stalled(desk):
    h = desk
    identity = await h.service.identify(h.key)
    attempt = relay.Attempt(
        h.service,
        identity,
        route_model("claude-sonnet-4-5"),
        protocol="anthropic",
        operation="messages",
    )
    for eof in (False, True):
        with pytest.raises(relay.ClientGone) as gone:
            await attempt.write(_GoneClient(), b"data", eof=eof)
        assert gone.value.code == "client_disconnected"
    attempt.client_gone = "client_stalled"  # the stall guard let it go
    with pytest.raises(relay.ClientGone) as gone:
        await attempt.write(_GoneClient(), b"data")
    assert gone.value.code == "client_stalled"


async def test_a_google_401_refreshes_the_token_too(desk):
    h = desk
    await h.add_antigravity_account("google", "ya29.old")
    h.google.expired.add("ya29.old")
    h.google.refresh_tokens["1//rt-google"] = "ya29.new"
    status, _, _ = await post(
        h, "/v1/chat/completions", {"model": "gemini-3-flash", "messages": ASK}
    )
    assert status == 200
    assert [s.token for s in h.google.seen][-1] == "ya29.new"


async def test_an_openai_api_key_account_goes_to_the_platform_api(desk):
    h = desk
    await h.add_codex_account("platform", "sk-platform", api_key=True)
    h.service.env["SUBLANE_CODEX_BASE_URL"] = "http://127.0.0.1:9"  # the ChatGPT backend: not used
    status, _, _ = await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert status == 200
    assert (h.codex.seen[-1].path, h.codex.seen[-1].token) == ("/v1/responses", "sk-platform")


async def test_a_second_scoped_fable_429_climbs_the_fable_ladder_only(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    fable = {**CLAUDE, "model": "claude-fable-5"}
    h.upstream.script(None, Reply(status=429), Reply(status=429))
    await post(h, "/v1/messages", fable)
    h.clock.advance(cooldown_seconds(1) + 1)
    status, headers, _ = await post(h, "/v1/messages", fable)
    assert (status, headers["Retry-After"]) == (429, str(int(cooldown_seconds(2))))
    acc = account(h, claude)
    assert (acc.fable_streak, acc.failure_streak) == (2, 0)


async def test_a_spent_codex_window_may_say_when_it_resets_and_only_a_429_says_it(desk):
    h = desk
    gpt = await h.add_codex_account("gpt", "tok-gpt")
    now = h.service.clock.now()
    spent = {"error": {"type": "usage_limit_reached", "message": "x", "resets_at": now + 600}}
    h.codex.script(None, CodexReply(kind="error", status=429, error_body=spent))
    await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert account(h, gpt).cooldown_until == now + 600
    h.clock.advance(700)
    spent = {"error": {"type": "usage_limit_reached", "message": "x", "resets_in_seconds": 4000}}
    h.codex.script(None, CodexReply(kind="error", status=503, error_body=spent))
    await post(h, "/v1/responses", {"model": "gpt-5.4", "input": "hi"})
    assert account(h, gpt).cooldown_until == h.service.clock.now() + cooldown_seconds(2)


async def test_a_google_error_page_that_is_not_json_is_retold_by_its_status(desk):
    h = desk
    await h.add_antigravity_account("google")
    h.google.script(AgReply(kind="error", status=502, error_body=b"<html>bad gateway</html>"))
    status, _, raw = await post(
        h, "/v1/chat/completions", {"model": "gemini-3-flash", "messages": ASK}
    )
    assert status == 502
    message = json.loads(raw)["error"]["message"]
    assert message == "the upstream answered HTTP 502 with a body that is not a Google error"
    assert (await last_record(h)).error_code == "http_502"


async def test_a_whole_google_answer_is_recorded_with_its_counts(desk):
    h = desk
    await h.add_antigravity_account("google")
    status, _, _ = await post(
        h, "/v1/chat/completions", {"model": "gemini-3-flash", "messages": ASK}
    )
    assert status == 200
    record = await last_record(h)
    assert record.outcome == "success"
    assert (record.input_tokens, record.cached_tokens) == (200, 150)
    assert record.output_tokens is not None and record.output_tokens >= 12


async def test_a_moved_turn_rereads_what_the_last_turn_of_its_model_left_warm(desk):
    """Anthropic leaves the read and the written input warm (5,000 + 30,000 of 40,000); the
    idle time and who served are the same model's last turn's, not a side request's."""
    h = desk
    await h.add_account("work", "tok-work")
    await h.add_account("lab", "tok-lab")
    session = {"x-claude-code-session-id": "sess-models"}
    h.upstream.script(
        None,
        turn(40_000, 5_000, 30_000),
        turn(1_000, 0, 0),
        turn(41_000, 0, 41_000),
    )
    await post(h, "/v1/messages", CLAUDE, session)
    main = await last_record(h)
    h.clock.advance(30)
    await post(h, "/v1/messages", {**CLAUDE, "model": "claude-haiku-4-5"}, session)
    assert (await last_record(h)).cache_miss == "first_turn"  # its own model's first
    h.clock.advance(0.6004)
    await h.service.pause(main.account_id)
    await post(h, "/v1/messages", CLAUDE, session)
    moved = await last_record(h)
    assert (moved.cache_miss, moved.reread_tokens) == ("account_switch", 35_000)
    assert moved.previous_account_id == main.account_id
    assert moved.idle_seconds == 30.6  # since the main model's turn, to the millisecond


async def test_a_429_releases_a_pinned_account(desk):
    h = desk
    claude = await h.add_account("claude", "tok-claude")
    await h.service.switch(claude)
    assert account(h, claude).pinned_until is not None
    h.upstream.script(None, Reply(status=429))
    await post(h, "/v1/messages", CLAUDE)
    assert account(h, claude).pinned_until is None


async def test_a_google_503_without_a_retry_delay_keeps_its_retry_after_header(desk):
    h = desk
    google = await h.add_antigravity_account("google")
    busy = google_error(503, "UNAVAILABLE", "try later")
    h.google.script(
        AgReply(kind="error", status=503, error_body=busy, headers={"Retry-After": "120"})
    )
    body = {"model": "gemini-3-flash", "messages": ASK}
    status, headers, _ = await post(h, "/v1/chat/completions", body)
    assert status == 503 and headers["Retry-After"] == "120"
    assert account(h, google).cooldown_until == h.service.clock.now() + 120
