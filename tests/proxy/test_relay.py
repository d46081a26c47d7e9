"""The relay's own rules: how an upstream status reads for the account, which headers may go
on the wire and back to the client, the stall guard and SSE frames, checked without a server;
then the translated paths (a rendered stream, a folded answer, the Antigravity envelope) end
to end, so the mutation run reaches them from this file."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import anthropic
import pytest
from multidict import CIMultiDict

from sublane_desktop.core.pool import Outcome
from sublane_desktop.proxy.relay import (
    WRITE_STALL_SECONDS,
    StallGuard,
    data_frame,
    named_frame,
    outcome_for_status,
    passback_headers,
    sendable,
)
from tests.fake_codex import CodexReply
from tests.openai_helpers import oai, raw_sse, records


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, Outcome.SUCCESS),
        (399, Outcome.SUCCESS),
        (400, Outcome.NEUTRAL),  # the client's mistake says nothing about the account
        (404, Outcome.NEUTRAL),
        (499, Outcome.NEUTRAL),
        (401, Outcome.AUTH_FAILURE),
        (429, Outcome.FAILURE),
        (500, Outcome.FAILURE),
        (529, Outcome.FAILURE),
    ],
)
def test_an_upstream_status_reads_as_the_accounts_outcome(status, outcome):
    assert outcome_for_status(status) == outcome


def test_a_header_that_is_not_valid_text_is_dropped_not_a_crash():
    headers = {"x-good": "fine", "x-bad": "caf\udcff", "x-also": "ok"}
    assert sendable(headers) == {"x-good": "fine", "x-also": "ok"}


def test_sse_frames_are_named_after_their_type_or_carry_data_verbatim():
    payload = {"type": "message_stop", "n": 1}
    assert named_frame(payload) == f"event: message_stop\ndata: {json.dumps(payload)}\n\n".encode()
    assert data_frame({"a": 1}) == b'data: {"a": 1}\n\n'
    assert data_frame("[DONE]") == b"data: [DONE]\n\n"


def _attempt(status: int, headers: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(
        upstream=SimpleNamespace(status=status, headers=CIMultiDict(headers)),
        request_id="req_ours",
        client_wait=lambda: 7,
    )


def test_an_anthropic_client_sees_the_quota_headers_and_our_request_id_only():
    upstream = {
        "Content-Type": "text/event-stream",
        "request-id": "req_theirs",
        "anthropic-organization-id": "org",
        "anthropic-ratelimit-unified-5h-utilization": "0.4",
        "Retry-After": "3600",
        "set-cookie": "a=b",
        "x-codex-primary-used-percent": "5",
    }
    assert passback_headers(_attempt(200, upstream), "anthropic") == {
        "Content-Type": "text/event-stream",
        "upstream-request-id": "req_theirs",
        "anthropic-organization-id": "org",
        "anthropic-ratelimit-unified-5h-utilization": "0.4",
        "X-Request-ID": "req_ours",
    }


def test_a_codex_client_sees_the_codex_headers_and_a_bounded_wait_on_a_429():
    upstream = {
        "x-request-id": "theirs",
        "x-codex-primary-used-percent": "5",
        "openai-model": "gpt-5.4",
        "retry-after": "99999",
        "anthropic-ratelimit-unified-5h-utilization": "0.4",
    }
    assert passback_headers(_attempt(429, upstream), "codex") == {
        "upstream-request-id": "theirs",
        "x-codex-primary-used-percent": "5",
        "openai-model": "gpt-5.4",
        "X-Request-ID": "req_ours",
        "Retry-After": "7",  # the attempt's own bounded wait, never the raw upstream value
    }
    assert "Retry-After" in passback_headers(_attempt(503, {}), "codex")
    assert "Retry-After" not in passback_headers(_attempt(500, {}), "codex")


def test_one_proxy_relaying_both_providers_keeps_their_header_rules_apart():
    # The same header names come back from both upstreams in one process: what one
    # provider's client may see must not decide what the other's sees.
    both = {
        "anthropic-ratelimit-unified-5h-utilization": "0.4",
        "x-codex-primary-used-percent": "5",
        "openai-model": "gpt-5.4",
    }
    for _ in range(2):  # the second round reads every verdict back from the cache
        assert passback_headers(_attempt(200, both), "anthropic") == {
            "anthropic-ratelimit-unified-5h-utilization": "0.4",
            "X-Request-ID": "req_ours",
        }
        assert passback_headers(_attempt(200, both), "codex") == {
            "x-codex-primary-used-percent": "5",
            "openai-model": "gpt-5.4",
            "X-Request-ID": "req_ours",
        }


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


async def test_a_client_that_takes_nothing_for_the_bound_is_let_go():
    transport, stalls = _Transport(), []
    guard = StallGuard(transport, lambda: stalls.append(True))
    now = [1000.0]
    guard.time = lambda: now[0]  # the guard's clock, moved by hand
    guard.start()
    assert guard._handle is not None
    guard._check()  # no write in progress: nothing to judge, checked again later
    assert not stalls and guard._handle is not None

    async def stuck_write() -> None:  # runs while the write is in progress
        assert guard.since == 1000.0
        now[0] += WRITE_STALL_SECONDS - 1
        guard._check()
        assert not stalls and not transport.aborted
        now[0] += 1
        guard._check()
        assert stalls == [True] and transport.aborted

    await guard.write(stuck_write())
    assert stalls == [True]
    assert guard.since is None  # a finished write is no longer timed
    guard.stop()
    assert guard._handle is None


async def test_a_stall_guard_checks_four_times_per_bound_and_can_be_started_again():
    guard = StallGuard(_Transport(), lambda: None)
    loop = asyncio.get_running_loop()
    guard.start()
    first = guard._handle
    assert first is not None
    assert first.when() - loop.time() == pytest.approx(WRITE_STALL_SECONDS / 4, abs=0.5)
    guard.stop()
    assert first.cancelled() and guard._handle is None
    guard.start()  # a stopped guard watches again when started
    assert guard._handle is not None and guard._handle is not first
    guard.stop()


async def test_a_short_stall_bound_is_checked_a_quarter_bound_apart(monkeypatch):
    from sublane_desktop.proxy import relay

    monkeypatch.setattr(relay, "WRITE_STALL_SECONDS", 0.2)
    guard = StallGuard(_Transport(), lambda: None)
    guard.start()
    assert guard._handle.when() - asyncio.get_running_loop().time() == pytest.approx(0.05, abs=0.02)
    guard.stop()


async def test_a_stall_guard_without_a_transport_never_runs():
    guard = StallGuard(None, lambda: None)
    guard.start()
    assert guard._handle is None
    guard.stop()


# --- the translated paths, end to end through the relay --------------------------------------------

ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


@pytest.fixture
async def codex_ready(codex_harness):
    h = codex_harness
    await h.add_codex_account("sub", "tok-sub")
    return h, await h.create_key()


async def test_a_codex_stream_is_rendered_for_a_chat_client_as_it_arrives(codex_ready):
    h, key = codex_ready
    status, headers, events = await raw_sse(
        h,
        key,
        "/v1/chat/completions",
        {"model": "gpt-5.4", "messages": ASK, "stream": True, "max_tokens": 50},
    )
    assert status == 200 and headers["x-request-id"].startswith("req_")
    assert events[-1] == (None, "[DONE]")
    text = "".join(d["choices"][0]["delta"].get("content") or "" for _, d in events[:-1])
    assert text == "Hello from the fake Codex upstream."
    seen = h.codex.seen[-1]
    assert seen.path.endswith("/responses") and seen.token == "tok-sub"
    assert seen.body["model"] == "gpt-5.4" and seen.body["stream"] is True
    assert seen.body["instructions"] == "Be brief."
    assert seen.headers["Accept"] == "text/event-stream"
    record = records(h)[-1]
    assert (record.provider, record.protocol, record.outcome) == ("codex", "openai-chat", "success")
    assert record.input_tokens == 20 and record.first_token_ms is not None


async def test_a_codex_answer_is_folded_whole_for_a_client_that_did_not_stream(codex_ready):
    h, key = codex_ready
    h.codex.script("tok-sub", CodexReply(terminal="incomplete"))
    completion = await oai(h, key).chat.completions.create(model="gpt-5.4", messages=ASK)
    assert completion.choices[0].message.content == "Hello from the fake Codex upstream."
    assert completion.choices[0].finish_reason == "length"
    record = records(h)[-1]
    assert (record.outcome, record.error_code) == ("incomplete", "length")
    assert (record.input_tokens, record.output_tokens) == (20, 9)


async def test_a_failed_codex_stream_ends_in_the_clients_error_shape_and_blames_the_account(
    codex_ready,
):
    h, key = codex_ready
    h.codex.script("tok-sub", CodexReply(terminal="failed", error_code="server_error"))
    status, _, events = await raw_sse(
        h, key, "/v1/chat/completions", {"model": "gpt-5.4", "messages": ASK, "stream": True}
    )
    assert status == 200
    assert events[-1][1]["error"]["code"] == "server_error"
    assert (None, "[DONE]") not in events
    record = records(h)[-1]
    assert (record.outcome, record.error_code) == ("error", "server_error")


async def test_an_antigravity_call_is_the_v1internal_envelope_with_the_logins_project(
    antigravity_harness,
):
    h = antigravity_harness
    await h.add_antigravity_account("google", "ya29.g")
    key = await h.create_key()
    client = anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0)
    h.clients.append(client)
    message = await client.messages.create(
        model="antigravity/claude-opus-4-6", max_tokens=64, messages=ASK[1:]
    )
    assert message.content[0].text == "Hello from the fake Antigravity upstream."
    seen = h.google.seen[-1]
    assert seen.path == "/v1internal:generateContent" and seen.token == "ya29.g"
    assert seen.body["project"] == "proj-fake-1"
    assert seen.body["model"] == "claude-opus-4-6-thinking"  # the served name
    assert seen.headers["User-Agent"].startswith("antigravity/")
    assert records(h)[-1].provider == "antigravity"


async def test_a_codex_stream_reaches_a_chat_client_before_the_upstream_ends_it(codex_ready):
    """R-PX-2 through a translation: every delta the upstream sent is on the Chat client's side
    while the upstream still holds its terminal event."""
    h, key = codex_ready
    gate = asyncio.Event()
    h.codex.script("tok-sub", CodexReply(gate=gate))
    stream = await oai(h, key).chat.completions.create(model="gpt-5.4", messages=ASK, stream=True)
    chunks = aiter(stream)
    text = ""
    async with asyncio.timeout(10):  # a relay that buffers would wait for the gate forever
        while text != "Hello from the fake Codex upstream.":
            text += (await anext(chunks)).choices[0].delta.content or ""
    assert not gate.is_set()
    gate.set()
    rest = [chunk async for chunk in chunks]
    assert [c.choices[0].finish_reason for c in rest if c.choices][-1] == "stop"
