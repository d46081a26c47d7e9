"""Claude Code's request reaches an Anthropic account as Claude Code sent it (SPEC R-WF-1):
same method, path and query, every header but those that stay here, the same body bytes but a
changed model value. Sent byte for byte with a raw HTTP client, so the test controls every
header's spelling and order; the fake upstream records what arrived the same way."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.providers import anthropic
from tests.fake_upstream import CLAUDE_CODE_HEADERS as CLAUDE_CODE_IDENTITY
from tests.fake_upstream import Reply
from tests.raw_http import raw_request

# What Claude Code 2.1.197 sent to a capture server (one run of `claude -p`), in its order and
# spelling; the body below stands in for its 76 kB one.
CLAUDE_CODE_HEADERS = [
    (b"Accept", b"application/json"),
    (b"Content-Type", b"application/json"),
    (b"User-Agent", b"claude-cli/2.1.197 (external, sdk-cli)"),
    (b"X-Claude-Code-Session-Id", b"f3ce7b99-621b-4877-ba15-7dc864c29f5b"),
    (b"X-Stainless-Arch", b"x64"),
    (b"X-Stainless-Lang", b"js"),
    (b"X-Stainless-OS", b"Linux"),
    (b"X-Stainless-Package-Version", b"0.94.0"),
    (b"X-Stainless-Retry-Count", b"0"),
    (b"X-Stainless-Runtime", b"node"),
    (b"X-Stainless-Runtime-Version", b"v26.3.0"),
    (b"X-Stainless-Timeout", b"600"),
    (b"X-Stainless-Helper-Method", b"stream"),
    (b"x-client-request-id", b"3f1c1e9e-5b7c-4c6e-9d51-0d6b8f0e2a11"),
    (
        b"anthropic-beta",
        b"claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14",
    ),
    (b"anthropic-dangerous-direct-browser-access", b"true"),
    (b"anthropic-version", b"2023-06-01"),
    (b"x-app", b"cli"),
    (b"Accept-Encoding", b"gzip, deflate, br, zstd"),
]
# What stays on our side: hop-by-hop headers and one the Connection header names, the
# client's cookies and what proxies say about the route.
OURS_ONLY = [
    (b"Connection", b"X-Hop-Secret"),
    (b"X-Hop-Secret", b"1"),
    (b"Keep-Alive", b"timeout=5"),
    (b"TE", b"trailers"),
    (b"Proxy-Authorization", b"Basic cHJveHk6c2VjcmV0"),
    (b"Cookie", b"session=abc"),
    (b"X-Forwarded-For", b"10.0.0.7"),
    (b"Forwarded", b"for=10.0.0.7"),
    (b"Via", b"1.1 corp-proxy"),
]
# Odd spacing, an escaped "model" inside the text and a nested one: none of it may change.
BODY = (
    b'{"model" :  "anthropic/claude-sonnet-4-5",\n "max_tokens":64,"stream":false,'
    b'"messages":[{"role":"user","content":[{"type":"text","text":"say \\"model\\": \\u00e9 '
    b'\xc3\xa9","cache_control":{"type":"ephemeral"}}]}],'
    b'"metadata":{"user_id":"{\\"session_id\\":\\"f3ce7b99\\"}","model":"nested"},'
    b'"temperature":1.0E0}'
)


def arrived_headers(seen) -> list[tuple[str, str]]:
    """What the upstream got, less what its own HTTP client writes (Host, Content-Length)."""
    return [(k, v) for k, v in seen.raw_headers if k.lower() not in ("host", "content-length")]


async def send(h, key: str, *, body: bytes = BODY, extra: list | None = None):
    headers = [(b"x-api-key", key.encode()), *CLAUDE_CODE_HEADERS, *(extra or [])]
    return await raw_request(h.url, "POST", "/v1/messages?beta=true", headers=headers, body=body)


async def test_headers_arrive_as_claude_code_sent_them_but_the_credential(harness):
    h = harness
    await h.add_account("work", "sk-ant-oat01-work")
    key = await h.create_key()
    answer = await send(h, key, extra=OURS_ONLY)
    assert answer.status == 200, answer.body
    seen = h.upstream.seen[-1]
    assert (seen.method, seen.path, seen.query) == ("POST", "/v1/messages", "beta=true")
    sent = [(k.decode(), v.decode()) for k, v in CLAUDE_CODE_HEADERS]
    beta = dict(sent)["anthropic-beta"] + "," + anthropic.OAUTH_BETA  # appended, nothing else
    expected = [(k, beta if k == "anthropic-beta" else v) for k, v in sent]
    expected.append(("authorization", "Bearer sk-ant-oat01-work"))
    assert arrived_headers(seen) == expected  # names as spelled, values, order
    assert key not in str(seen.raw_headers)


async def test_an_unbound_request_carries_one_fresh_correlation_id_not_the_clients(harness):
    """R-POOL-6 over R-WF-1: a request with no conversation gets our random id in place of
    the client's own x-client-request-id, whatever its spelling, never both (the client
    session merges header names case-insensitively, the last value kept)."""
    h = harness
    await h.add_account("work")
    key = await h.create_key()
    headers = [
        (b"x-api-key", key.encode()),
        (b"Content-Type", b"application/json"),
        (b"anthropic-version", b"2023-06-01"),
        (b"X-Client-Request-Id", b"client-chosen-1"),
        *((k.encode(), v.encode()) for k, v in CLAUDE_CODE_IDENTITY.items()),  # (R-WF-2)
    ]
    body = (
        b'{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"x"}]}'
    )
    answer = await raw_request(h.url, "POST", "/v1/messages", headers=headers, body=body)
    assert answer.status == 200
    ids = [v for k, v in h.upstream.seen[-1].raw_headers if k.lower() == "x-client-request-id"]
    assert len(ids) == 1 and ids[0] != "client-chosen-1"


async def test_an_api_key_account_gets_the_betas_unchanged_and_its_key(harness):
    h = harness
    await h.add_account("plain", "sk-ant-api03-plain", api_key=True)
    key = await h.create_key()
    assert (await send(h, key)).status == 200
    sent = [(k.decode(), v.decode()) for k, v in CLAUDE_CODE_HEADERS]
    assert arrived_headers(h.upstream.seen[-1]) == [*sent, ("x-api-key", "sk-ant-api03-plain")]


async def test_only_the_model_values_bytes_change_in_the_body(harness):
    h = harness
    await h.add_account("work")
    key = await h.create_key()
    assert (await send(h, key)).status == 200
    expected = BODY.replace(b'"anthropic/claude-sonnet-4-5"', b'"claude-sonnet-4-5"')
    assert h.upstream.seen[-1].raw == expected
    same = BODY.replace(b"anthropic/claude-sonnet-4-5", b"claude-sonnet-4-5")
    assert (await send(h, key, body=same)).status == 200
    assert h.upstream.seen[-1].raw == same  # nothing to change: the very bytes


async def test_the_1m_suffix_comes_off_the_body_and_its_beta_is_appended_once(harness):
    h = harness
    await h.add_account("work")
    key = await h.create_key()
    body = BODY.replace(b"anthropic/claude-sonnet-4-5", b"claude-sonnet-4-5[1m]")
    assert (await send(h, key, body=body)).status == 200
    seen = h.upstream.seen[-1]
    assert seen.raw == body.replace(b"claude-sonnet-4-5[1m]", b"claude-sonnet-4-5")
    betas = seen.headers["anthropic-beta"].split(",")
    assert betas.count("context-1m-2025-08-07") == 1  # Claude Code listed it already
    assert betas[-1] == anthropic.OAUTH_BETA


async def test_a_foreign_thinking_block_is_the_one_case_written_anew(harness):
    """A conversation that was on a GPT model carries its thinking signatures, which Anthropic
    refuses: they are taken out, and that body is re-serialised (the documented exception)."""
    from sublane_desktop.core.translate.events import OPENAI_TAG

    h = harness
    await h.add_account("work")
    key = await h.create_key()
    foreign = {"type": "thinking", "thinking": "hm", "signature": OPENAI_TAG + "abc"}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [foreign, {"type": "text", "text": "yo"}]},
            {"role": "user", "content": "again"},
        ],
    }
    assert (await send(h, key, body=json.dumps(body).encode())).status == 200
    sent = h.upstream.seen[-1].body
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "yo"}]
    # a body that merely mentions the tag, with nothing to strip, goes as it was
    mention = json.dumps(dict(body, messages=[{"role": "user", "content": OPENAI_TAG}]))
    assert (await send(h, key, body=mention.encode())).status == 200
    assert h.upstream.seen[-1].raw == mention.encode()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_gzip_answer_reaches_the_client_decoded_and_its_usage_is_recorded(harness, stream):
    """Claude Code offers gzip, br and zstd; the upstream may compress. The relay reads the
    answer decoded (for the record) and the client gets the decoded bytes without a
    Content-Encoding that would no longer be true."""
    h = harness
    await h.add_account("work")
    key = await h.create_key()
    h.upstream.script(None, Reply(encoding="gzip"))
    body = BODY.replace(b'"stream":false', b'"stream":true') if stream else BODY
    answer = await send(h, key, body=body)
    assert answer.status == 200
    seen = h.upstream.seen[-1]
    assert seen.headers["Accept-Encoding"] == "gzip, deflate, br, zstd"  # as Claude Code sent it
    assert "content-encoding" not in answer.headers
    if stream:
        assert b"event: message_stop" in answer.body
        assert b"Hello from the fake upstream." not in answer.body  # split in deltas
    else:
        assert json.loads(answer.body)["content"][0]["text"] == "Hello from the fake upstream."
    await h.service.flush_records()
    record = h.service.records[-1]
    assert (record.outcome, record.input_tokens, record.output_tokens) == ("success", 50, 7)


async def test_the_sdk_reads_a_compressed_answer_through_sublane(harness):
    import anthropic as sdk

    h = harness
    await h.add_account("work")
    key = await h.create_key()
    h.upstream.script(None, Reply(encoding="gzip"), Reply(encoding="gzip"))
    client = sdk.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_IDENTITY
    )
    ask = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "x"}],
    }
    message = await client.messages.create(**ask)
    assert message.content[0].text == "Hello from the fake upstream."
    async with client.messages.stream(**ask) as events:
        final = await events.get_final_message()
    assert final.usage.output_tokens == 7


def test_accept_encoding_is_narrowed_only_to_what_the_relay_can_decode():
    full = "gzip, deflate, br, zstd"
    assert anthropic.accept_encoding(full, frozenset({"gzip", "deflate", "br", "zstd"})) == full
    assert anthropic.accept_encoding(full, frozenset({"gzip", "deflate"})) == "gzip, deflate"
    assert anthropic.accept_encoding("br;q=1.0, gzip;q=0.5", frozenset({"gzip"})) == "gzip;q=0.5"
    assert anthropic.accept_encoding("br", frozenset({"gzip"})) == "identity"
    assert anthropic.accept_encoding("identity", frozenset()) == "identity"
    assert anthropic.accept_encoding("gzip, identity;q=0.1", frozenset({"gzip"})) == (
        "gzip, identity;q=0.1"  # identity is always readable: nothing to narrow
    )
    assert anthropic.accept_encoding("*", frozenset({"gzip"})) == "identity"  # any: not safe


def test_the_relay_can_decode_every_coding_claude_code_offers():
    """The installed decoders (Brotli, zstd) let Claude Code's Accept-Encoding go unchanged."""
    assert {"gzip", "deflate", "br", "zstd"} <= anthropic.DECODABLE
    assert {"gzip", "x-gzip", "deflate", "br", "zstd"} >= anthropic.DECODABLE
