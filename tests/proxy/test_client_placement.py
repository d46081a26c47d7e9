"""Claude requests by what the account accepts (SPEC R-WF-2).

An Anthropic subscription login serves Claude Code only: the strict fake refuses any other
client on an OAuth token, as Anthropic does. SubLane never dresses a client up as Claude Code;
it places other clients on API-key accounts, and says plainly what to add when only
subscription logins could serve them.
"""

from __future__ import annotations

import aiohttp
import anthropic
import openai
import pytest

from tests.fake_upstream import CLAUDE_CODE_HEADERS, CLAUDE_CODE_ONLY, Reply
from tests.openai_helpers import records

ASK = [{"role": "user", "content": "hi"}]


def sdk(h, key, **headers) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=headers or None
    )


def oai(h, key) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=h.url + "/v1", api_key=key, max_retries=0)


def state(h, account_id: int) -> str:
    pool = h.service.pool
    return pool.state_of(pool.accounts[account_id])


async def test_an_sdk_client_with_only_subscription_logins_gets_a_403_that_says_what_to_add(
    harness,
):
    h = harness
    work = await h.add_account("work-max", "sk-ant-oat01-work")
    key = await h.create_key()
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        await sdk(h, key).messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    error = caught.value.body["error"]
    assert error["type"] == "permission_error" and error["code"] == "claude_code_only"
    assert "work-max" in error["message"] and "Claude Code only" in error["message"]
    assert "sublane account add --provider anthropic" in error["message"]
    assert h.upstream.seen == []  # never sent upstream to be refused there
    (record,) = records(h)
    assert (record.outcome, record.error_code) == ("rejected", "claude_code_only")
    assert state(h, work) == "ok"  # the login did nothing wrong


async def test_an_sdk_client_is_served_by_the_api_key_account_and_claude_code_by_either(harness):
    h = harness
    await h.add_account("work-max", "sk-ant-oat01-work")
    await h.add_account("api", "sk-ant-api03-team", api_key=True)
    key = await h.create_key()
    for _ in range(4):
        await sdk(h, key).messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    assert h.upstream.tokens_served() == ["sk-ant-api03-team"] * 4
    assert h.upstream.client_refusals == 0
    # Claude Code's own requests may use the subscription login: with the key paused, it does.
    await h.service.pause("api")
    claude_code = sdk(h, key, **CLAUDE_CODE_HEADERS)
    await claude_code.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    assert h.upstream.seen[-1].token == "sk-ant-oat01-work"
    # ... and with the key paused, another client is told why it cannot be served.
    with pytest.raises(anthropic.APIStatusError) as caught:
        await sdk(h, key).messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    # The API key is there, only paused: that is what the client is told.
    assert caught.value.status_code == 503 and "account api is paused" in caught.value.message
    assert h.upstream.client_refusals == 0


async def test_claude_code_alone_is_served_by_the_subscription_login(harness):
    h = harness
    await h.add_account("work-max", "sk-ant-oat01-work")
    key = await h.create_key()
    claude_code = sdk(h, key, **CLAUDE_CODE_HEADERS)
    answer = await claude_code.messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=ASK
    )
    assert answer.content[0].text
    assert h.upstream.tokens_served() == ["sk-ant-oat01-work"]
    assert h.upstream.client_refusals == 0


async def test_a_translated_claude_request_is_never_put_on_a_subscription_login(codex_harness):
    """Chat Completions and Responses clients are never Claude Code, whatever they send."""
    h = codex_harness
    await h.add_account("work-max", "sk-ant-oat01-work")
    key = await h.create_key()
    with pytest.raises(openai.PermissionDeniedError) as chat:
        await oai(h, key).chat.completions.create(
            model="claude-sonnet-4-5", messages=ASK, extra_headers=CLAUDE_CODE_HEADERS
        )
    assert chat.value.body["code"] == "claude_code_only"
    with pytest.raises(openai.PermissionDeniedError) as responses:
        await oai(h, key).responses.create(model="claude-sonnet-4-5", input="hi")
    assert "Claude Code only" in responses.value.body["message"]
    assert h.upstream.seen == []
    api = await h.add_account("api", "sk-ant-api03-team", api_key=True)
    reply = await oai(h, key).chat.completions.create(model="claude-sonnet-4-5", messages=ASK)
    assert reply.choices[0].message.content
    assert h.upstream.tokens_served() == ["sk-ant-api03-team"]
    assert records(h)[-1].account_id == api


async def test_a_conversation_bound_by_claude_code_does_not_carry_another_client_to_the_login(
    harness,
):
    h = harness
    await h.add_account("work-max", "sk-ant-oat01-work")
    await h.add_account("api", "sk-ant-api03-team", api_key=True)
    key = await h.create_key()
    session = {"x-claude-code-session-id": "11111111-2222-3333-4444-555555555555"}
    claude_code = sdk(h, key, **CLAUDE_CODE_HEADERS, **session)
    # Claude Code's conversation lands on whichever account; an SDK client reusing its
    # session id never reaches the subscription login.
    await claude_code.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    await sdk(h, key, **session).messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=ASK
    )
    assert h.upstream.seen[-1].token == "sk-ant-api03-team"
    assert h.upstream.client_refusals == 0


@pytest.mark.parametrize("status", [400, 401, 403])
@pytest.mark.parametrize(
    ("words", "code"),
    [
        (CLAUDE_CODE_ONLY, "claude_code_only"),
        (
            "Third-party apps now draw from your extra usage, not your plan limits. Turn on"
            " extra usage to keep going.",
            "third_party_extra_usage",
        ),
    ],
)
async def test_the_upstreams_refusal_of_a_client_is_no_account_failure(
    harness, words, code, status
):
    """Whatever status it comes with (400 is what PROTOCOLS.md records; a 401 is refreshed
    and retried once first), a refusal of the client never cools or fails the login."""
    h = harness
    work = await h.add_account("work-max", "sk-ant-oat01-work")
    key = await h.create_key()
    h.upstream.refresh_grants["rt-work-max"] = ("sk-ant-oat01-work-2", "rt-work-max-2")
    refusal = Reply(status=status, error_type="invalid_request_error", message=words)
    h.upstream.script(None, refusal, refusal)
    claude_code = sdk(h, key, **CLAUDE_CODE_HEADERS)
    with pytest.raises(anthropic.APIStatusError) as caught:
        await claude_code.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=ASK)
    assert caught.value.body["error"]["message"] == words  # the client reads its words
    record = records(h)[-1]
    assert (record.outcome, record.error_code) == ("error", code)
    assert state(h, work) == "ok"  # no cooldown, no auth failure
    account = h.service.pool.accounts[work]
    assert account.failure_streak == 0 and not account.auth_failed
    h.upstream.scripts.clear()  # (the 400 and 403 cases left one refusal unused)
    answer = await claude_code.messages.create(
        model="claude-sonnet-4-5", max_tokens=8, messages=ASK
    )
    assert answer.content[0].text  # the next request is served by the same login


async def test_the_refusal_shows_in_sublane_requests(harness):
    h = harness
    await h.add_account("work-max", "sk-ant-oat01-work")
    key = await h.create_key()
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + "/v1/messages",
            json={"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": ASK},
            headers={"x-api-key": key},
        ) as r:
            assert r.status == 403
            request_id = r.headers["X-Request-ID"]
        await h.service.flush_records()
        async with s.get(
            h.url + "/api/requests",
            headers={"Authorization": f"Bearer {h.service.admin_token}"},
        ) as r:
            items = (await r.json())["items"]
    (row,) = [item for item in items if item["request_id"] == request_id]
    assert (row["outcome"], row["error_code"]) == ("rejected", "claude_code_only")
