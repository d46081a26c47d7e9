"""A Claude request spills to an Antigravity account when no Anthropic account can take it, and
comes back when one can (R-AG-3, R-POOL-5). Real SDKs, fake Anthropic and Antigravity upstreams."""

from __future__ import annotations

import anthropic
import pytest

from tests.openai_helpers import oai, records

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def ready(antigravity_harness):
    h = antigravity_harness
    h.work = await h.add_account("work", "sk-ant-oat01-work")
    h.google_id = await h.add_antigravity_account("google")
    return h, await h.create_key()


def sdk(h, key) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0)


async def test_claude_spills_to_antigravity_while_anthropic_is_paused_and_returns(ready):
    h, key = ready
    answer = await sdk(h, key).messages.create(
        model="claude-sonnet-4-5", max_tokens=32, messages=ASK
    )
    assert answer.content[0].text == "Hello from the fake upstream."
    assert len(h.google.seen) == 0
    await h.service.pause(h.work, True)
    async with sdk(h, key).messages.stream(
        model="claude-sonnet-4-5", max_tokens=32, messages=ASK
    ) as stream:
        spilled = await stream.get_final_message()
    assert spilled.content[0].text  # answered by Antigravity, in the Messages shape
    assert len(h.google.seen) == 1 and h.google.seen[-1].body["model"] == "claude-sonnet-4-5"
    await h.service.unpause(h.work)
    served_before = len(h.upstream.seen)
    await sdk(h, key).messages.create(model="claude-sonnet-4-5", max_tokens=32, messages=ASK)
    assert len(h.upstream.seen) == served_before + 1 and len(h.google.seen) == 1
    # the record says which provider served each turn
    assert [(r.provider, r.outcome) for r in records(h)] == [
        ("anthropic", "success"),
        ("antigravity", "success"),
        ("anthropic", "success"),
    ]


async def test_chat_completions_for_claude_spill_too(ready):
    h, key = ready
    await h.service.pause(h.work, True)
    reply = await oai(h, key).chat.completions.create(model="claude-sonnet-4-5", messages=ASK)
    assert reply.choices[0].message.content
    assert len(h.google.seen) == 1


async def test_explicit_anthropic_prefix_and_fable_and_token_counting_never_spill(ready):
    h, key = ready
    await h.service.pause(h.work, True)
    for model in ("anthropic/claude-sonnet-4-5", "claude-fable-5"):
        with pytest.raises(anthropic.APIStatusError):
            await sdk(h, key).messages.create(model=model, max_tokens=8, messages=ASK)
    with pytest.raises(anthropic.APIStatusError):
        await sdk(h, key).messages.count_tokens(model="claude-sonnet-4-5", messages=ASK)
    assert h.google.seen == []
    assert h.service.pool.in_flight == 0
