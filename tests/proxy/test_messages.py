"""The Anthropic route end to end: the real `anthropic` SDK -> SubLane -> fake upstream."""

from __future__ import annotations

import asyncio

import anthropic

from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply


def client(h, key: str, **kw) -> anthropic.AsyncAnthropic:
    headers = {**CLAUDE_CODE_HEADERS, **kw.pop("default_headers", {})}
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=headers, **kw
    )


async def test_non_streaming_answer_through_the_account(harness):
    await harness.add_account("work", "sk-ant-oat01-work")
    key = await harness.create_key()
    reply = await client(harness, key).messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    message = await reply.parse()
    assert message.content[0].text == "Hello from the fake upstream."
    assert reply.headers["x-request-id"].startswith("req_")
    seen = harness.upstream.seen[-1]
    assert seen.token == "sk-ant-oat01-work"  # the account's credential, not the client key
    assert key not in str(seen.headers)
    assert "oauth-2025-04-20" in seen.headers["anthropic-beta"]
    assert seen.headers["anthropic-version"]  # the client's own version, forwarded unchanged


async def test_streaming_relays_every_event_in_order(harness):
    await harness.add_account("work")
    key = await harness.create_key()
    async with client(harness, key).messages.stream(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_message()
    assert final.content[0].text == "Hello from the fake upstream."
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.usage.output_tokens == 7


async def test_client_betas_are_merged_with_the_oauth_beta(harness):
    await harness.add_account("work")
    key = await harness.create_key()
    await client(
        harness, key, default_headers={"anthropic-beta": "tools-2024,foo"}
    ).messages.create(
        model="claude-sonnet-4-5[1m]", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    seen = harness.upstream.seen[-1]
    betas = seen.headers["anthropic-beta"].split(",")
    assert betas[:2] == ["tools-2024", "foo"]
    assert "oauth-2025-04-20" in betas and "context-1m-2025-08-07" in betas
    assert seen.body["model"] == "claude-sonnet-4-5"  # suffix stripped before upstream


async def test_api_key_account_uses_x_api_key(harness):
    await harness.add_account("plain", "sk-ant-api-123", api_key=True)
    key = await harness.create_key()
    await client(harness, key).messages.create(
        model="anthropic/claude-haiku-4-5",
        max_tokens=8,
        messages=[{"role": "user", "content": "x"}],
    )
    seen = harness.upstream.seen[-1]
    assert seen.headers["x-api-key"] == "sk-ant-api-123"
    assert "authorization" not in {k.lower() for k in seen.headers}
    assert seen.body["model"] == "claude-haiku-4-5"


async def test_query_string_is_kept(harness):
    await harness.add_account("work")
    key = await harness.create_key()
    import aiohttp

    async with aiohttp.ClientSession() as s:
        async with s.post(
            harness.url + "/v1/messages?beta=true",
            json={
                "model": "claude-sonnet-4-5",
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "x"}],
            },
            headers={"Authorization": f"Bearer {key}", **CLAUDE_CODE_HEADERS},
        ) as r:
            assert r.status == 200
    assert harness.upstream.seen[-1].query == "beta=true"


async def test_count_tokens(harness):
    await harness.add_account("work")
    key = await harness.create_key()
    result = await client(harness, key).messages.count_tokens(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}]
    )
    assert result.input_tokens == 42
    assert harness.upstream.seen[-1].path == "/v1/messages/count_tokens"


async def test_unbound_requests_carry_a_fresh_random_correlation_id_and_bound_ones_do_not(harness):
    await harness.add_account("work", "sk-ant-oat01-work")
    key = await harness.create_key()
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    await client(harness, key).messages.create(**body)
    await client(harness, key).messages.create(**body)
    first, second = (seen.headers.get("x-client-request-id") for seen in harness.upstream.seen[-2:])
    assert first and second and first != second  # fresh per request: nothing ties them together
    await client(harness, key, default_headers={"x-claude-code-session-id": "s-1"}).messages.create(
        **body
    )
    assert "x-client-request-id" not in harness.upstream.seen[-1].headers
    # never stored: the database files know nothing of it once the records are written
    await harness.service.flush_records()
    stored = b"".join(path.read_bytes() for path in harness.service.data_dir.glob("sublane.db*"))
    assert first.encode() not in stored and second.encode() not in stored


async def test_client_anthropic_version_goes_upstream_unchanged(harness):
    """R-PX-3: the client's own anthropic-version, not ours."""
    await harness.add_account("work")
    key = await harness.create_key()
    await client(harness, key, default_headers={"anthropic-version": "2099-12-31"}).messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    assert harness.upstream.seen[-1].headers["anthropic-version"] == "2099-12-31"


async def test_the_key_decides_the_group_and_so_the_accounts(harness):
    """R-PX-1: a key of a second group is served by that group's accounts only."""
    await harness.add_account("home", "sk-ant-oat01-home")
    await harness.add_account("team", "sk-ant-oat01-team", group="team")
    home_key = await harness.create_key("home")
    team_key = await harness.create_key("team", group="team")
    for _ in range(2):
        await client(harness, team_key).messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
    await client(harness, home_key).messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    assert harness.upstream.tokens_served() == [
        "sk-ant-oat01-team",
        "sk-ant-oat01-team",
        "sk-ant-oat01-home",
    ]
    await harness.service.flush_records()
    groups = [r.group_id for r in harness.service.records]
    assert groups[0] == groups[1] != groups[2]


async def test_a_stream_reaches_the_client_as_the_upstream_sends_it(harness):
    """R-PX-2: no buffering of whole responses. The upstream sends the start and every text
    delta, then holds the rest; the client already reads all of them meanwhile, and the stream
    ends only once the upstream sends the end."""
    await harness.add_account("work")
    key = await harness.create_key()
    gate = asyncio.Event()
    harness.upstream.script(None, Reply(kind="sse", gate=gate, events=3))
    async with client(harness, key).messages.stream(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = ""
        events = aiter(stream)
        async with asyncio.timeout(10):  # a proxy that buffers would wait for the gate forever
            while text != "Hello from the fake upstream.":
                event = await anext(events)
                if event.type == "text":
                    text += event.text
        assert not gate.is_set()  # everything so far came while the upstream held the rest
        gate.set()
        rest = [event.type async for event in events]
    assert rest[-1] == "message_stop"
    assert (await stream.get_final_message()).stop_reason == "end_turn"
