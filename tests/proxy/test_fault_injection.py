"""Fault injection against the fake upstreams (SPEC §10, R-FT-1, R-FT-4, R-FT-10).

Every fault is scripted on the fake Anthropic / Codex server: an upstream that never sends
headers, one that falls silent mid-stream, one that drops the connection, 429s with every kind
of `retry-after`, every 5xx and 529. For each: what the client sees, the record, the cooldown,
and the slot back within the configured timeout (1 s here; nothing sleeps, tests wait on state).
"""

from __future__ import annotations

import asyncio
import json
import time
from email.utils import formatdate

import aiohttp
import anthropic
import pytest

from sublane_desktop.core.history import HistoryQuery
from tests.fake_codex import CodexReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply, never_accepting_url
from tests.openai_helpers import records, until

TIMEOUT = 1.0
SLACK = 2.0  # scheduling on a shared CI machine; a regression here would be ~600 s
CLAUDE = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


@pytest.fixture
async def ready(codex_harness):
    h = codex_harness
    await h.add_account("claude", "tok-claude", api_key=True)  # serves any client (R-WF-2)
    await h.add_codex_account("gpt", "tok-gpt")
    await h.service.update_settings(
        {
            "upstream.connect_timeout_s": TIMEOUT,
            "upstream.header_timeout_s": TIMEOUT,
            "upstream.idle_timeout_s": TIMEOUT,
        }
    )
    return h, await h.create_key()


def account(h, name):
    return next(a for a in h.service.pool.accounts.values() if a.name == name)


async def last_record(h):
    await h.service.flush_records()
    return records(h)[-1]


def assert_cooled(h, name, now=None):
    acc = account(h, name)
    assert acc.failure_streak == 1
    assert acc.cooldown_until is not None and acc.cooldown_until > h.service.clock.now()
    assert acc.in_flight == 0 and h.service.pool.in_flight == 0


async def call(h, key, path, body, *, stream=False):
    """(status, headers, body bytes or the SSE event payloads, seconds taken)."""
    t0 = time.monotonic()
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + path, json=body, headers={"x-api-key": key, **CLAUDE_CODE_HEADERS}
        ) as r:
            raw = await r.read()
            elapsed = time.monotonic() - t0
            if stream and r.status == 200:
                events = [
                    json.loads(line[5:])
                    for line in raw.decode().splitlines()
                    if line.startswith("data:") and line[5:].strip() != "[DONE]"
                ]
                return r.status, r.headers, events, elapsed
            return r.status, r.headers, raw, elapsed


# --- upstream hangs before headers: 504 upstream_timeout ------------------------------------------

HANG_ROUTES = [
    ("/v1/messages", CLAUDE, "claude", "anthropic"),
    ("/v1/messages", {**CLAUDE, "model": "gpt-5.4"}, "gpt", "anthropic"),
    (
        "/v1/chat/completions",
        {"model": "claude-sonnet-4-5", "messages": CLAUDE["messages"]},
        "claude",
        "openai",
    ),
    ("/v1/chat/completions", {"model": "gpt-5.4", "messages": CLAUDE["messages"]}, "gpt", "openai"),
    ("/v1/responses", {"model": "gpt-5.4", "input": "x"}, "gpt", "openai"),
    ("/v1/responses", {"model": "claude-sonnet-4-5", "input": "x"}, "claude", "openai"),
    ("/v1/responses/compact", {"model": "gpt-5.4", "input": []}, "gpt", "openai"),
]


def script_fault(h, name, anthropic_kind, codex_kind=None):
    if name == "claude":
        h.upstream.script(None, Reply(kind=anthropic_kind))
    else:
        h.codex.script(None, CodexReply(kind=codex_kind or anthropic_kind))


@pytest.mark.parametrize("path, body, name, shape", HANG_ROUTES)
async def test_an_upstream_that_never_answers_is_a_504_within_the_header_timeout(
    ready, path, body, name, shape
):
    h, key = ready
    script_fault(h, name, "hang")
    status, headers, raw, elapsed = await call(h, key, path, body)
    assert status == 504 and elapsed < TIMEOUT + SLACK
    error = json.loads(raw)
    code = error["error"]["code"]
    assert code == "upstream_timeout"
    assert error["request_id"] == headers["X-Request-ID"]
    record = await last_record(h)
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "upstream_timeout",
        None,
    )
    assert_cooled(h, name)


async def test_the_header_clock_starts_when_the_request_has_its_connection(ready):
    """Connect and header phases are timed apart (R-FT-1): a generous connect allowance does
    not add to the wait for headers once the upstream has taken the request."""
    h, key = ready
    await h.service.update_settings({"upstream.connect_timeout_s": 60})
    script_fault(h, "claude", "hang")
    status, _, raw, elapsed = await call(h, key, "/v1/messages", CLAUDE)
    assert status == 504 and json.loads(raw)["error"]["code"] == "upstream_timeout"
    assert elapsed < TIMEOUT + SLACK  # not connect + headers (61 s)


async def test_a_socket_turn_whose_upstream_never_answers_gets_an_error_event(ready):
    h, key = ready
    h.codex.script(None, CodexReply(kind="hang"))
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        t0 = time.monotonic()
        await ws.send_str(
            json.dumps({"type": "response.create", "model": "gpt-5.4", "input": "hi"})
        )
        error = json.loads((await ws.receive(timeout=TIMEOUT + SLACK)).data)
        assert time.monotonic() - t0 < TIMEOUT + SLACK
    assert (error["type"], error["status"], error["code"]) == ("error", 504, "upstream_timeout")
    assert (await last_record(h)).error_code == "upstream_timeout"
    assert_cooled(h, "gpt")


async def test_an_unreachable_upstream_is_502_within_the_connect_timeout(ready):
    """A port whose accept queue is full takes no new connection: connect hangs."""
    h, key = ready
    with never_accepting_url() as url:
        h.service.env["SUBLANE_ANTHROPIC_BASE_URL"] = url
        status, _headers, raw, elapsed = await call(h, key, "/v1/messages", CLAUDE)
    assert status == 502 and elapsed < TIMEOUT + SLACK
    assert json.loads(raw)["error"]["code"] == "upstream_unreachable"
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "upstream_unreachable")
    assert_cooled(h, "claude")


# --- the upstream falls silent mid-stream: the protocol's error event, record incomplete ----------

STALL_ROUTES = [
    # (path, body, account, how the client's stream carries the error code)
    (
        "/v1/messages",
        {**CLAUDE, "stream": True},
        "claude",
        lambda events: events[-1]["error"]["code"],
    ),
    (
        "/v1/messages",
        {**CLAUDE, "model": "gpt-5.4", "stream": True},
        "gpt",
        lambda events: events[-1]["error"]["code"],
    ),
    (
        "/v1/chat/completions",
        {"model": "claude-sonnet-4-5", "messages": CLAUDE["messages"], "stream": True},
        "claude",
        lambda events: events[-1]["error"]["code"],
    ),
    (
        "/v1/chat/completions",
        {"model": "gpt-5.4", "messages": CLAUDE["messages"], "stream": True},
        "gpt",
        lambda events: events[-1]["error"]["code"],
    ),
    (
        "/v1/responses",
        {"model": "gpt-5.4", "input": "x", "stream": True},
        "gpt",
        lambda events: events[-1]["code"],
    ),
    (
        "/v1/responses",
        {"model": "claude-sonnet-4-5", "input": "x", "stream": True},
        "claude",
        lambda events: events[-1]["response"]["error"]["code"],
    ),
]


@pytest.mark.parametrize("path, body, name, code_of", STALL_ROUTES)
async def test_a_stream_that_falls_silent_ends_with_upstream_timeout(
    ready, path, body, name, code_of
):
    h, key = ready
    script_fault(h, name, "stall")
    status, _, events, elapsed = await call(h, key, path, body, stream=True)
    assert status == 200 and elapsed < TIMEOUT + SLACK
    assert code_of(events) == "upstream_timeout"
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("incomplete", "upstream_timeout")
    assert_cooled(h, name)


@pytest.mark.parametrize(
    "path, body, name, kind",
    [
        ("/v1/messages", CLAUDE, "claude", "json_stall"),
        ("/v1/responses", {"model": "gpt-5.4", "input": "x"}, "gpt", "stall"),
        (
            "/v1/chat/completions",
            {"model": "gpt-5.4", "messages": CLAUDE["messages"]},
            "gpt",
            "stall",
        ),
    ],
)
async def test_a_body_that_falls_silent_is_a_504(ready, path, body, name, kind):
    h, key = ready
    script_fault(h, name, kind)
    status, _headers, raw, elapsed = await call(h, key, path, body)
    assert status == 504 and elapsed < TIMEOUT + SLACK
    assert json.loads(raw)["error"]["code"] == "upstream_timeout"
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("incomplete", "upstream_timeout")
    assert_cooled(h, name)


async def test_a_socket_turn_that_falls_silent_gets_an_error_event(ready):
    h, key = ready
    h.codex.script(None, CodexReply(kind="stall"))
    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        await ws.send_str(
            json.dumps({"type": "response.create", "model": "gpt-5.4", "input": "hi"})
        )
        created = json.loads((await ws.receive(timeout=TIMEOUT + SLACK)).data)
        error = json.loads((await ws.receive(timeout=TIMEOUT + SLACK)).data)
    assert created["type"] == "response.created"
    assert (error["type"], error["code"]) == ("error", "upstream_timeout")
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("incomplete", "upstream_timeout")
    assert_cooled(h, "gpt")


async def test_a_slow_stream_that_never_falls_silent_is_not_cut(ready):
    """No total-duration limit: only silence is a fault (R-FT-1). Five deltas 0.4 s apart
    take twice the idle timeout in all and arrive whole."""
    h, key = ready
    h.upstream.script(
        None,
        Reply(kind="sse", events=5, delay_between=TIMEOUT * 0.4, text="one two three four five"),
    )
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    async with client.messages.stream(**CLAUDE) as stream:
        message = await stream.get_final_message()
    assert message.content[0].text == "one two three four five"
    assert (await last_record(h)).outcome == "success"
    assert account(h, "claude").failure_streak == 0


async def test_timeouts_are_read_at_request_time(ready):
    h, key = ready
    await h.service.update_settings({"upstream.header_timeout_s": 30})
    h.upstream.script(None, Reply(kind="json", delay_first=TIMEOUT + 0.5))
    status, *_ = await call(h, key, "/v1/messages", CLAUDE)
    assert status == 200  # 1.5 s to the first byte is fine under a 30 s header timeout


@pytest.mark.parametrize("value", [0, -1, "10", True, None, 1e9])
async def test_timeout_settings_are_validated(ready, value):
    h, _ = ready
    with pytest.raises(ValueError, match=r"upstream\.idle_timeout_s"):
        await h.service.update_settings({"upstream.idle_timeout_s": value})
    assert h.service.settings["upstream.idle_timeout_s"] == TIMEOUT


# --- the upstream drops the connection mid-stream -------------------------------------------------


@pytest.mark.parametrize(
    "path, body, name",
    [
        ("/v1/messages", {**CLAUDE, "stream": True}, "claude"),
        ("/v1/responses", {"model": "gpt-5.4", "input": "x", "stream": True}, "gpt"),
    ],
)
async def test_a_connection_closed_mid_stream_is_an_error_event_and_a_failure(
    ready, path, body, name
):
    h, key = ready
    script_fault(h, name, "drop")
    status, _, events, _ = await call(h, key, path, body, stream=True)
    assert status == 200 and events[-1]["type"] == "error"
    record = await last_record(h)
    assert (record.outcome, record.error_code) == ("error", "upstream_dropped")
    assert_cooled(h, name)


# --- 429 and its retry-after ----------------------------------------------------------------------


def http_date(seconds_from_now: float) -> str:
    return formatdate(time.time() + seconds_from_now, usegmt=True)


@pytest.mark.parametrize(
    "value, wait",
    [
        ("30", 30),
        ("date+120", 120),
        ("-5", 15),
        ("soon", 15),
        ("", 15),
        ("1e12", 15),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 15),
        (None, 15),
    ],
)
async def test_a_429_retry_after_in_any_form_sets_a_bounded_wait_and_cooldown(ready, value, wait):
    h, key = ready
    if value == "date+120":
        value = http_date(120)
    h.upstream.script(None, Reply(status=429, error_type="rate_limit_error", retry_after=value))
    status, headers, _raw, _ = await call(h, key, "/v1/messages", CLAUDE)
    assert status == 429
    assert abs(int(headers["Retry-After"]) - wait) <= 2
    record = await last_record(h)
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "rate_limit_error",
        429,
    )
    assert_cooled(h, "claude")
    rest = account(h, "claude").cooldown_until - h.service.clock.now()
    assert abs(rest - wait) <= 2


# --- every 5xx and 529 is a failure (R-FT-10) -----------------------------------------------------


async def test_every_5xx_and_529_cools_the_account(ready):
    h, key = ready
    statuses = list(range(500, 600))
    for status in statuses:
        h.upstream.script(None, Reply(status=status, error_type="api_error"))
        got, headers, _, _ = await call(h, key, "/v1/messages", CLAUDE)
        assert got == status
        record = await last_record(h)
        assert (record.outcome, record.upstream_status) == ("error", status)
        assert_cooled(h, "claude"), status
        if status == 503:
            assert 1 <= int(headers["Retry-After"]) <= 300
        await h.service.resume("claude")  # next status on a healthy account
    page = await h.service.request_log.page(HistoryQuery(), owner=None)
    assert page["items"][0]["upstream_status"] == 599


@pytest.mark.parametrize("status", [501, 505, 507, 520, 524, 529])
async def test_translated_routes_count_odd_5xx_as_failures_too(ready, status):
    h, key = ready
    h.codex.script(None, CodexReply(status=status))
    got, _, raw, _ = await call(
        h, key, "/v1/chat/completions", {"model": "gpt-5.4", "messages": CLAUDE["messages"]}
    )
    assert got == status
    assert json.loads(raw)["error"]["code"] == "server_error"
    assert_cooled(h, "gpt")


async def test_in_flight_is_back_to_zero_after_a_fault_storm(ready):
    """Faults of every kind at once on both providers: every slot comes back, every attempt
    has exactly one record."""
    h, key = ready
    await h.service.update_settings({"pool.cap": 16})
    for acc in list(h.service.pool.accounts.values()):
        await h.service.set_limit(acc.id, 8)
    kinds = ["hang", "stall", "drop", "error"]
    for kind in kinds:
        h.upstream.script(None, Reply(kind=kind, status=500 if kind == "error" else 200))
        h.codex.script(None, CodexReply(kind=kind, status=500 if kind == "error" else 200))
    bodies = [({**CLAUDE, "stream": True}, "/v1/messages")] * len(kinds) + [
        ({"model": "gpt-5.4", "input": "x", "stream": True}, "/v1/responses")
    ] * len(kinds)
    results = await asyncio.gather(
        *(call(h, key, path, body, stream=True) for body, path in bodies)
    )
    assert all(elapsed < TIMEOUT + SLACK for *_, elapsed in results)
    await until(lambda: h.service.pool.in_flight == 0, "every slot released")
    await h.service.flush_records()
    assert len(records(h)) == len(bodies)
