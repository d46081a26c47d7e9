"""Antigravity accounts end to end (R-AG-1, R-AG-2, R-POOL-7): the real `anthropic` and `openai`
SDKs -> SubLane -> the fake Antigravity upstream (tests/fake_antigravity.py), which refuses
what the real service refuses, thought signatures that do not come back included."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import anthropic
import openai
import pytest

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.affinity import conversation_digest
from sublane_desktop.core.records import cache_hit_rate
from sublane_desktop.core.translate.gemini import GEMINI_TAG, SKIP_SIGNATURE
from sublane_desktop.providers import antigravity
from tests.fake_antigravity import AgReply, google_error
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import oai as openai_client
from tests.openai_helpers import records

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a command",
        "input_schema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": False,
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]
ASK = [{"role": "user", "content": "list the files"}]
TOOL_TURN = AgReply(
    text="I'll run ls.",
    thought="The user wants a listing.",
    tool_calls=[("Bash", {"command": "ls"})],
)


def sdk(h, key, **headers) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **headers},
    )
    h.clients.append(client)
    return client


def oai(h, key) -> openai.AsyncOpenAI:
    client = openai_client(h, key)
    h.clients.append(client)
    return client


@pytest.fixture
async def ready(antigravity_harness):
    h = antigravity_harness
    h.account_id = await h.add_antigravity_account("google")
    return h, await h.create_key()


async def test_claude_code_drives_gemini_with_tools_and_thinking(ready):
    """Two turns, streamed, the way Claude Code sends them: the thinking block and the
    tool_use come back on the next turn, and the fake refuses it unless both signatures do."""
    h, key = ready
    h.google.script(TOOL_TURN, AgReply(text="Two files: a.txt and b.txt."))
    client = sdk(h, key, **{"x-claude-code-session-id": "cc-7"})
    async with client.messages.stream(
        model="gemini-3.1-pro-high",
        max_tokens=1024,
        system="You are Claude Code.",
        messages=ASK,
        tools=TOOLS,
        thinking={"type": "enabled", "budget_tokens": 4000},
    ) as stream:
        kinds = [event.type async for event in stream]
        first = await stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [b.type for b in first.content] == ["thinking", "text", "thinking", "tool_use"]
    thinking, text, _, tool = first.content
    assert thinking.thinking == "The user wants a listing."
    assert thinking.signature.startswith(GEMINI_TAG)
    assert text.text == "I'll run ls."
    assert (tool.name, tool.input) == ("Bash", {"command": "ls"})
    assert first.stop_reason == "tool_use" and first.model == "gemini-3.1-pro-high"
    assert (
        first.usage.input_tokens,
        first.usage.cache_read_input_tokens,
        first.usage.output_tokens,
    ) == (50, 150, 20)
    seen = h.google.seen[-1]
    assert seen.path == "/v1internal:streamGenerateContent?alt=sse"
    assert seen.headers["Authorization"] == "Bearer ya29.google"
    assert seen.body["project"] == "proj-fake-1" and seen.body["model"] == "gemini-3.1-pro-high"
    inner = seen.body["request"]
    assert inner["systemInstruction"]["parts"] == [{"text": "You are Claude Code."}]
    assert inner["sessionId"] == conversation_digest("s:cc-7", "antigravity")
    assert inner["tools"][0]["functionDeclarations"][0]["parameters"] == {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    }
    assert inner["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingBudget": 8192,
    }

    follow = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "a.txt\nb.txt"}],
        },
    ]
    async with client.messages.stream(
        model="gemini-3.1-pro-high", max_tokens=1024, messages=follow, tools=TOOLS
    ) as stream:
        second = await stream.get_final_message()
    assert second.content[0].text == "Two files: a.txt and b.txt."
    model_turn, answer = h.google.seen[-1].body["request"]["contents"][1:]
    assert model_turn["parts"][0]["thoughtSignature"] == "sig-thought-1"
    assert model_turn["parts"][2]["thoughtSignature"] == "sig-call-1"
    assert answer["parts"][0]["functionResponse"] == {
        "name": "Bash",
        "id": tool.id,
        "response": {"output": "a.txt\nb.txt"},
    }

    await h.service.flush_records()
    record = records(h)[0]
    assert (record.protocol, record.provider, record.model, record.outcome) == (
        "anthropic",
        "antigravity",
        "gemini-3.1-pro-high",
        "success",
    )
    assert (record.input_tokens, record.output_tokens, record.cached_tokens) == (200, 20, 150)
    assert record.first_token_ms is not None
    assert cache_hit_rate(record.input_tokens, record.cached_tokens) == "75%"
    async with (
        aiohttp.ClientSession() as s,
        s.get(
            h.url + "/api/requests", headers={"Authorization": f"Bearer {h.service.admin_token}"}
        ) as r,
    ):
        items = (await r.json())["items"]
    assert {i["cache_hit_rate"] for i in items} == {"75%"}


async def test_signatures_the_client_dropped_go_back_as_the_placeholder(ready):
    """A client that drops thinking blocks still continues: the call goes back with Google's
    placeholder signature; a thought part with a forged signature is refused upstream."""
    h, key = ready
    h.google.script(TOOL_TURN)
    first = await sdk(h, key).messages.create(
        model="gemini-3.1-pro-high", max_tokens=64, messages=ASK, tools=TOOLS
    )
    content = [b.model_dump() for b in first.content if b.type != "thinking"]
    follow = [
        *ASK,
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": content[-1]["id"], "content": "x"}],
        },
    ]
    await sdk(h, key).messages.create(
        model="gemini-3.1-pro-high", max_tokens=64, messages=follow, tools=TOOLS
    )
    call = h.google.seen[-1].body["request"]["contents"][1]["parts"][-1]
    assert call["thoughtSignature"] == SKIP_SIGNATURE
    forged = [
        {"type": "thinking", "thinking": "I made this up", "signature": GEMINI_TAG + "t:forged"},
        *content,
    ]
    with pytest.raises(anthropic.BadRequestError) as err:
        await sdk(h, key).messages.create(
            model="gemini-3.1-pro-high",
            max_tokens=64,
            messages=[*ASK, {"role": "assistant", "content": forged}, follow[-1]],
            tools=TOOLS,
        )
    assert "thought signature" in err.value.message


async def test_a_whole_answer_uses_generate_content(ready):
    h, key = ready
    message = await sdk(h, key).messages.create(
        model="antigravity/gemini-3-flash", max_tokens=64, messages=ASK
    )
    assert message.content[0].text == "Hello from the fake Antigravity upstream."
    assert message.stop_reason == "end_turn"
    assert h.google.seen[-1].path == "/v1internal:generateContent"
    assert h.google.seen[-1].body["model"] == "gemini-3-flash"
    record = records(h)[-1]
    assert (record.outcome, record.input_tokens, record.cached_tokens) == ("success", 200, 150)


async def test_chat_completions_to_gemini(ready):
    h, key = ready
    h.google.script(
        AgReply(text="", tool_calls=[("weather", {"city": "Oslo"})]), AgReply(text="Rain in Oslo.")
    )
    client = oai(h, key)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    stream = await client.chat.completions.create(
        model="gemini-3.1-pro-high",
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=tools,
    )
    chunks = [c async for c in stream]
    calls = [t for c in chunks if c.choices for t in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].function.name == "weather"
    assert json.loads("".join(t.function.arguments or "" for t in calls)) == {"city": "Oslo"}
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].usage.prompt_tokens == 200
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 150
    # Chat has nowhere to keep the signature: the turn goes back with Google's placeholder
    answer = await client.chat.completions.create(
        model="gemini-3.1-pro-high",
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": calls[0].id,
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": calls[0].id, "content": "rain"},
        ],
        tools=tools,
    )
    assert answer.choices[0].message.content == "Rain in Oslo."
    contents = h.google.seen[-1].body["request"]["contents"]
    assert contents[1]["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE
    assert contents[2]["parts"][0]["functionResponse"]["name"] == "weather"
    assert records(h)[-1].protocol == "openai-chat"


async def test_responses_to_gemini_keeps_reasoning_across_turns(ready):
    h, key = ready
    h.google.script(TOOL_TURN, AgReply(text="Done."))
    client = oai(h, key)
    stream = await client.responses.create(
        model="gemini-3.1-pro-high",
        input="list the files",
        stream=True,
        reasoning={"effort": "high"},
        tools=[{"type": "function", "name": "Bash", "parameters": TOOLS[0]["input_schema"]}],
    )
    events = [e async for e in stream]
    final = events[-1].response
    assert events[-1].type == "response.completed"
    kinds = [i.type for i in final.output]
    assert kinds == ["reasoning", "message", "reasoning", "function_call"]
    assert final.usage.input_tokens == 200
    assert final.usage.input_tokens_details.cached_tokens == 150
    call = final.output[3]
    follow = [
        {"role": "user", "content": "list the files"},
        *[i.model_dump(exclude_none=True) for i in final.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "a.txt"},
    ]
    done = await client.responses.create(model="gemini-3.1-pro-high", input=follow)
    assert done.output_text == "Done."
    parts = h.google.seen[-1].body["request"]["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "sig-thought-1"
    assert parts[2]["thoughtSignature"] == "sig-call-1"
    assert records(h)[-1].protocol == "openai-responses"


async def test_an_expired_token_is_refreshed_once_and_kept(ready):
    h, key = ready
    h.google.expired.add("ya29.google")
    h.google.refresh_tokens["1//rt-google"] = "ya29.fresh"
    message = await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert message.content[0].text.startswith("Hello")
    assert [s.token for s in h.google.seen] == ["ya29.fresh"]
    form = h.google.refreshes[-1]
    assert form["grant_type"] == "refresh_token" and form["refresh_token"] == "1//rt-google"
    assert (form["client_id"], form["client_secret"]) == antigravity.CLIENTS["antigravity"]
    stored = json.loads(h.service.secrets.get(account_secret(h.account_id)))
    assert stored["access_token"] == "ya29.fresh" and stored["project_id"] == "proj-fake-1"
    assert records(h)[-1].outcome == "success"


async def test_a_refused_refresh_marks_the_account_auth_failed(ready):
    h, key = ready
    h.google.expired.add("ya29.google")  # and the refresh token is unknown: invalid_grant
    with pytest.raises(anthropic.APIStatusError) as err:
        await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert err.value.status_code == 401
    assert h.service.accounts_runtime()["accounts"][0]["state"] == "auth_failed"
    with pytest.raises(anthropic.APIStatusError) as again:
        await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert "signed in again" in again.value.message


async def test_resource_exhausted_cools_for_the_retry_delay(ready):
    h, key = ready
    h.google.script(
        AgReply(
            kind="error",
            status=429,
            error_body=google_error(
                429, "RESOURCE_EXHAUSTED", "Quota exceeded for gemini-3-pro", "42s"
            ),
        )
    )
    t0 = h.service.clock.now()
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(model="gemini-3.1-pro-high", max_tokens=8, messages=ASK)
    assert err.value.response.headers["retry-after"] == "42"
    assert "Quota exceeded" in err.value.message
    view = h.service.accounts_runtime()["accounts"][0]
    assert view["state"] == "cooling"
    assert 41 <= view["cooldown_until"] - t0 <= 44
    record = records(h)[-1]
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "resource_exhausted",
        429,
    )
    with pytest.raises(anthropic.RateLimitError) as cooling:
        await sdk(h, key).messages.create(model="gemini-3.1-pro-high", max_tokens=8, messages=ASK)
    assert cooling.value.body["error"]["code"] == "account_cooling"


async def test_the_project_is_discovered_once_and_kept(antigravity_harness):
    h = antigravity_harness
    account_id = await h.add_antigravity_account("noproj", project=None)
    key = await h.create_key()
    client = sdk(h, key)
    await asyncio.gather(
        *(
            client.messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
            for _ in range(2)
        )
    )
    await client.messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert h.google.load_calls == ["ya29.noproj"]
    assert {s.body["project"] for s in h.google.seen} == {"proj-fake-1"}
    stored = json.loads(h.service.secrets.get(account_secret(account_id)))
    assert stored["project_id"] == "proj-fake-1"


async def test_a_credential_read_before_discovery_ended_does_not_discover_again(
    antigravity_harness,
):
    # A quota read or request that read the projectless credential while the first discovery
    # was running reaches with_project after it ended: it gets the project, with no second call.
    h = antigravity_harness
    account_id = await h.add_antigravity_account("late", project=None)
    key = await h.create_key()
    await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    account = h.service.pool.find(account_id)
    credential = {"access_token": "ya29.late", "refresh_token": "1//rt-late"}
    late = await h.service.antigravity.with_project(account, credential)
    assert late["project_id"] == "proj-fake-1"
    assert h.google.load_calls == ["ya29.late"]


async def test_project_discovery_with_a_stale_token_refreshes_once(antigravity_harness):
    h = antigravity_harness
    account_id = await h.add_antigravity_account("stale", project=None)
    h.google.expired.add("ya29.stale")
    h.google.refresh_tokens["1//rt-stale"] = "ya29.stale-renewed"
    key = await h.create_key()
    message = await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert message.content[0].text.startswith("Hello")
    assert h.google.load_calls == ["ya29.stale-renewed"]
    stored = json.loads(h.service.secrets.get(account_secret(account_id)))
    assert (stored["access_token"], stored["project_id"]) == ("ya29.stale-renewed", "proj-fake-1")
    # a login Google no longer knows: one clear message, and the account is signed out
    other = await h.add_antigravity_account("gone", project=None)
    h.google.expired.add("ya29.gone")
    await h.service.pause(account_id)
    with pytest.raises(anthropic.APIStatusError) as err:
        await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert "loadCodeAssist answered HTTP 401" in err.value.message
    assert h.service.account_view(other)["state"] == "auth_failed"


async def test_bad_input_gets_one_clear_message_and_the_server_keeps_serving(ready):
    h, key = ready
    # a model an Antigravity account cannot serve: 400 before admission, no record
    with pytest.raises(anthropic.BadRequestError) as err:
        await sdk(h, key).messages.create(model="antigravity/gpt-5.4", max_tokens=8, messages=ASK)
    assert "serve gemini-* and claude-*" in err.value.message
    with pytest.raises(Exception) as chat_err:
        await oai(h, key).chat.completions.create(
            model="antigravity/o3", messages=[{"role": "user", "content": "hi"}]
        )
    assert "serve gemini-*" in str(chat_err.value)
    assert records(h) == [] and h.google.seen == []
    # a model Antigravity does not know: its 404 reaches the client as a 404
    with pytest.raises(anthropic.NotFoundError) as missing:
        await sdk(h, key).messages.create(model="gemini-0-nope", max_tokens=8, messages=ASK)
    assert "not found" in missing.value.message
    # a Google error body that is not JSON
    h.google.script(AgReply(kind="error", status=503, error_body=b"<html>oops</html>"))
    with pytest.raises(anthropic.APIStatusError) as broken:
        await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert broken.value.status_code == 503
    assert broken.value.body["error"]["message"] == (
        "the upstream answered HTTP 503 with a body that is not a Google error"
    )
    assert "<html>" not in json.dumps(broken.value.body)
    await h.service.resume(h.account_id)
    message = await sdk(h, key).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert message.content[0].text.startswith("Hello")


async def test_a_responses_socket_turn_on_gemini(ready):
    """Codex-style WebSocket turns reach Gemini too: translated each way, continued by
    previous_response_id with the signed reasoning and the call kept for the next turn."""
    h, key = ready
    h.google.script(TOOL_TURN, AgReply(text="Done."))
    tools = [{"type": "function", "name": "Bash", "parameters": TOOLS[0]["input_schema"]}]

    async def turn(ws, message) -> list[dict]:
        await ws.send_str(json.dumps(message))
        events = []
        while True:
            event = json.loads((await asyncio.wait_for(ws.receive(), 5)).data)
            events.append(event)
            if event["type"] in ("response.completed", "response.failed", "error"):
                return events

    async with (
        aiohttp.ClientSession() as s,
        s.ws_connect(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        first = await turn(
            ws,
            {
                "type": "response.create",
                "model": "gemini-3.1-pro-high",
                "input": "list the files",
                "tools": tools,
            },
        )
        assert first[-1]["type"] == "response.completed", first[-1]
        output = first[-1]["response"]["output"]
        call = next(i for i in output if i["type"] == "function_call")
        second = await turn(
            ws,
            {
                "type": "response.create",
                "model": "gemini-3.1-pro-high",
                "previous_response_id": first[-1]["response"]["id"],
                "tools": tools,
                "input": [
                    {"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"}
                ],
            },
        )
    assert second[-1]["type"] == "response.completed"
    assert "Done." in json.dumps(second[-1]["response"]["output"])
    parts = h.google.seen[-1].body["request"]["contents"][1]["parts"]
    assert parts[-1]["thoughtSignature"] == "sig-call-1"


async def test_moving_a_conversation_from_gemini_to_claude_drops_gemini_signatures(ready):
    h, key = ready
    await h.add_account("claude", "sk-ant-oat01-claude")
    h.google.script(AgReply(text="Hi.", thought="Greeting."))
    first = await sdk(h, key).messages.create(
        model="gemini-3.1-pro-high", max_tokens=64, messages=ASK
    )
    assert first.content[0].signature.startswith(GEMINI_TAG)
    await sdk(h, key).messages.create(
        model="claude-sonnet-4-5",
        max_tokens=64,
        messages=[
            *ASK,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": "and now?"},
        ],
    )
    sent = h.upstream.seen[-1].body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["text"]


async def test_a_gemini_stream_reaches_the_client_before_the_upstream_ends_it(ready):
    """R-PX-2 through the Gemini translation: the text is on the client's side while the
    upstream still holds its finishing chunk."""
    h, key = ready
    gate = asyncio.Event()
    h.google.script(AgReply(gate=gate))
    async with sdk(h, key).messages.stream(
        model="gemini-3-flash", max_tokens=64, messages=ASK
    ) as stream:
        events = aiter(stream)
        text = ""
        async with asyncio.timeout(10):  # a relay that buffers would wait for the gate forever
            while text != "Hello from the fake Antigravity upstream.":
                event = await anext(events)
                if event.type == "text":
                    text += event.text
        assert not gate.is_set()
        gate.set()
        rest = [event.type async for event in events]
    assert rest[-1] == "message_stop"
