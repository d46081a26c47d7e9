"""A Claude request spills to an Antigravity account when no Anthropic account can take it, and
comes back when one can (R-AG-3, R-POOL-5); only to an account that serves the model, binding
nothing when it fails, and a spilled conversation goes home for a model the spill provider does
not serve or on an operator action (R-WF-6, the issue's probe). Real SDKs, fake Anthropic and
Antigravity upstreams."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from sublane_desktop.store import repositories as repo
from tests.fake_antigravity import AgReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.openai_helpers import oai, records, until

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def ready(antigravity_harness):
    h = antigravity_harness
    h.work = await h.add_account("work", "sk-ant-oat01-work")
    h.google_id = await h.add_antigravity_account("google")
    return h, await h.create_key()


def sdk(h, key) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )


async def test_claude_spills_to_antigravity_while_anthropic_is_paused_and_returns(ready):
    h, key = ready
    answer = await sdk(h, key).messages.create(
        model="claude-sonnet-4-6", max_tokens=32, messages=ASK
    )
    assert answer.content[0].text == "Hello from the fake upstream."
    assert len(h.google.seen) == 0
    await h.service.pause(h.work, True)
    async with sdk(h, key).messages.stream(
        model="claude-sonnet-4-6", max_tokens=32, messages=ASK
    ) as stream:
        spilled = await stream.get_final_message()
    assert spilled.content[0].text  # answered by Antigravity, in the Messages shape
    assert len(h.google.seen) == 1 and h.google.seen[-1].body["model"] == "claude-sonnet-4-6"
    await h.service.unpause(h.work)
    served_before = len(h.upstream.seen)
    await sdk(h, key).messages.create(model="claude-sonnet-4-6", max_tokens=32, messages=ASK)
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
    reply = await oai(h, key).chat.completions.create(model="claude-sonnet-4-6", messages=ASK)
    assert reply.choices[0].message.content
    assert len(h.google.seen) == 1


async def test_explicit_anthropic_prefix_and_fable_and_token_counting_never_spill(ready):
    h, key = ready
    await h.service.pause(h.work, True)
    for model in ("anthropic/claude-sonnet-4-6", "claude-fable-5"):
        with pytest.raises(anthropic.APIStatusError):
            await sdk(h, key).messages.create(model=model, max_tokens=8, messages=ASK)
    with pytest.raises(anthropic.APIStatusError):
        await sdk(h, key).messages.count_tokens(model="claude-sonnet-4-6", messages=ASK)
    assert h.google.seen == []
    assert h.service.pool.in_flight == 0


# --- R-WF-6: the probe -------------------------------------------------------------------

CLAUDE_CODE = {"user-agent": "claude-cli/2.1.197 (external, cli)", "x-app": "cli"}


def claude_code(h, key, session: str) -> anthropic.AsyncAnthropic:
    """The real SDK sending what Claude Code sends to say who it is, in one session."""
    headers = dict(CLAUDE_CODE, **{"x-claude-code-session-id": session})
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=headers
    )


async def streamed(client: anthropic.AsyncAnthropic) -> None:
    """A streamed Claude Code turn (the fake holds a stream open on its gate)."""
    async with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=8, messages=ASK
    ) as stream:
        await stream.get_final_message()
    await client.close()


async def stored_bindings(h) -> dict:
    return await h.service.store.read(repo.load_bindings)


async def test_haiku_never_spills_to_an_antigravity_account_that_does_not_serve_it(
    antigravity_harness,
):
    """One Anthropic account at its limit of 1 (a request held in flight); a new Claude Code
    session's claude-haiku-4-5 does not spill to the Antigravity account, which does not serve
    haiku: it gets the pool's busy answer, nothing binds it to Antigravity, and once Anthropic
    frees up its turns go there."""
    h = antigravity_harness
    work = await h.add_account("work", "sk-ant-oat01-work", limit=1)
    google = await h.add_antigravity_account("google")
    key = await h.create_key()
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    held = asyncio.create_task(streamed(claude_code(h, key, "busy-session")))
    await until(h.upstream.started.is_set, "the held request upstream")
    probe = claude_code(h, key, "new-session")
    with pytest.raises(anthropic.APIStatusError) as busy:
        await probe.messages.create(model="claude-haiku-4-5", max_tokens=8, messages=ASK)
    assert busy.value.status_code in (429, 503)
    assert busy.value.body["error"]["code"] == "account_busy"
    assert h.google.seen == []  # never sent where haiku is not served
    assert google not in h.service.pool.bindings.values()
    assert google not in (await stored_bindings(h)).values()
    gate.set()
    await held
    for _ in range(2):
        answer = await probe.messages.create(model="claude-haiku-4-5", max_tokens=8, messages=ASK)
        assert answer.content[0].text == "Hello from the fake upstream."
    assert h.upstream.seen[-1].body["model"] == "claude-haiku-4-5" and h.google.seen == []
    assert set(h.service.pool.bindings.values()) == {work}
    await probe.close()


async def test_a_spilled_session_goes_home_on_an_unserved_model_and_on_a_switch(
    antigravity_harness,
):
    h = antigravity_harness
    work = await h.add_account("work", "sk-ant-oat01-work", limit=1)
    google = await h.add_antigravity_account("google")
    key = await h.create_key()
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    held = asyncio.create_task(streamed(claude_code(h, key, "busy-session")))
    await until(h.upstream.started.is_set, "the held request upstream")
    spilled = claude_code(h, key, "spilled-session")
    await spilled.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert len(h.google.seen) == 1  # Antigravity serves sonnet 4.6: it took the spill
    assert google in h.service.pool.bindings.values()
    assert google not in (await stored_bindings(h)).values()  # a spill is never persisted
    gate.set()
    await held
    # the next turn names haiku, which Antigravity does not serve: home to Anthropic
    await spilled.messages.create(model="claude-haiku-4-5", max_tokens=8, messages=ASK)
    assert len(h.google.seen) == 1 and h.upstream.seen[-1].body["model"] == "claude-haiku-4-5"
    assert set(h.service.pool.bindings.values()) == {work}

    # spilled again while Anthropic is busy; then the person switches to the Anthropic account
    gate2 = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate2))
    held = asyncio.create_task(streamed(claude_code(h, key, "busy-session")))
    await until(lambda: h.service.pool.accounts[work].in_flight == 1, "Anthropic busy again")
    other = claude_code(h, key, "another-session")
    await other.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert len(h.google.seen) == 2 and google in h.service.pool.bindings.values()
    gate2.set()
    await held
    await h.service.switch(work)
    assert google not in h.service.pool.bindings.values()
    await other.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert len(h.google.seen) == 2  # the switched-to Anthropic account served it
    await spilled.close()
    await other.close()


async def test_a_failed_spill_leaves_no_binding(antigravity_harness):
    h = antigravity_harness
    work = await h.add_account("work", "sk-ant-oat01-work")
    google = await h.add_antigravity_account("google")
    key = await h.create_key()
    await h.service.pause(work)
    h.google.script(AgReply(kind="error", status=500, error_body={"error": {"code": 500}}))
    client = claude_code(h, key, "failing-session")
    with pytest.raises(anthropic.APIStatusError):
        await client.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert google not in h.service.pool.bindings.values()
    await client.close()


async def test_an_account_whose_own_list_lacks_the_model_takes_no_spill(antigravity_harness):
    """Once an account's fetchAvailableModels has answered, its list alone says what it serves
    (before that, the known August 2026 names)."""
    h = antigravity_harness
    work = await h.add_account("work", "sk-ant-oat01-work")
    google = await h.add_antigravity_account("google")
    key = await h.create_key()
    del h.google.quota["claude-sonnet-4-6"]  # this login is not served Sonnet
    assert (await h.service.verify(google))["result"] == "ok"  # one fetchAvailableModels
    await h.service.pause(work)
    client = claude_code(h, key, "listed-session")
    with pytest.raises(anthropic.APIStatusError) as refused:
        await client.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert refused.value.status_code == 503 and h.google.seen == []
    await client.messages.create(model="claude-opus-4-6", max_tokens=8, messages=ASK)
    assert h.google.seen[-1].body["model"] == "claude-opus-4-6-thinking"  # the alias table
    await client.close()
