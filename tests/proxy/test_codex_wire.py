"""R-WF-4 and R-WF-1 for Codex, against the strict fake ChatGPT backend (tests/fake_codex.py):
translated and SDK requests lose the fields the backend refuses and carry `system` items as
`developer` ones; Codex CLI's own requests reach the backend as Codex sent them; the model list
asks as a current client version (docs/upstreams.md "Codex")."""

from __future__ import annotations

import json

import aiohttp
import anthropic
import pytest

from sublane_desktop import __version__
from tests.fake_codex import UNSUPPORTED
from tests.openai_helpers import oai, records


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_codex_account("sub", "tok-sub")
    return codex_harness, await codex_harness.create_key()


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


async def test_claude_code_helper_requests_with_temperature_reach_gpt(ready):
    """Claude Code's small helper requests (titles, summaries) send `temperature: 1`."""
    h, key = ready
    client = anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0)
    message = await client.messages.create(
        model="gpt-5.4",
        max_tokens=512,
        extra_body={"temperature": 1, "top_p": 0.9},
        system="Write a 5-word title.",
        messages=[{"role": "user", "content": "fix the build"}],
    )
    assert message.content[0].text == "Hello from the fake Codex upstream."
    body = h.codex.seen[-1].body
    assert not set(UNSUPPORTED) & set(body)
    assert body["instructions"] == "Write a 5-word title."
    # a translated request is not Claude Code at the ChatGPT backend
    assert h.codex.seen[-1].headers["User-Agent"] == f"sublane-desktop/{__version__}"


async def test_chat_completions_with_sampling_and_a_late_system_message(ready):
    h, key = ready
    answer = await oai(h, key).chat.completions.create(
        model="gpt-5.4",
        temperature=0.2,
        top_p=0.5,
        max_tokens=300,
        user="someone",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "system", "content": "Now answer in French."},
            {"role": "user", "content": "again"},
        ],
    )
    assert answer.choices[0].message.content == "Hello from the fake Codex upstream."
    body = h.codex.seen[-1].body
    assert not set(UNSUPPORTED) & set(body)
    assert all(item.get("role") != "system" for item in body["input"])


async def test_responses_sdk_fields_the_backend_refuses_are_dropped(ready):
    h, key = ready
    refused = {
        "temperature": 0.3,
        "top_p": 0.9,
        "max_output_tokens": 200,
        "truncation": "auto",
        "user": "u-1",
        "safety_identifier": "s-1",
        "prompt_cache_retention": "24h",
        "context_management": [{"type": "compaction"}],
    }
    assert set(refused) == set(UNSUPPORTED)
    response = await oai(h, key).responses.create(
        model="gpt-5.4",
        input=[
            {"type": "message", "role": "system", "content": "Be brief."},
            user("hi"),
            {"type": "message", "role": "system", "content": "Now in French."},
            user("again"),
        ],
        extra_body=refused,
    )
    assert response.output_text == "Hello from the fake Codex upstream."
    body = h.codex.seen[-1].body
    assert not set(UNSUPPORTED) & set(body)
    assert body["instructions"] == "Be brief."
    assert [i["role"] for i in body["input"]] == ["user", "developer", "user"]
    assert body["input"][1]["content"] == "Now in French."


async def test_the_fake_refuses_as_the_backend_does(codex_upstream):
    """The fake itself: each refusal in the backend's words (a fake that accepts what the real
    backend refuses is a defect, R-WF-7)."""
    base = {
        "model": "gpt-5.4",
        "input": [user("hi")],
        "stream": True,
        "store": False,
    }
    cases = [
        (dict(base, temperature=1), "Unsupported parameter: temperature"),
        (dict(base, top_p=1), "Unsupported parameter: top_p"),
        (dict(base, max_output_tokens=5), "Unsupported parameter: max_output_tokens"),
        (dict(base, store=True), "Store must be set to false"),
        ({k: v for k, v in base.items() if k != "store"}, "Store must be set to false"),
        (dict(base, stream=False), "Stream must be set to true"),
        (
            dict(base, input=[user("hi"), {"role": "system", "content": "x"}]),
            "System messages are not allowed",
        ),
    ]
    headers = {"Authorization": "Bearer t", "ChatGPT-Account-Id": "a", "originator": "codex_exec"}
    async with aiohttp.ClientSession() as http:
        for body, words in cases:
            async with http.post(
                codex_upstream.url + "/responses", json=body, headers=headers
            ) as r:
                assert (r.status, await r.json()) == (400, {"detail": words})
        async with http.post(codex_upstream.url + "/responses", json=base, headers=headers) as r:
            assert r.status == 200


# --- Codex CLI itself: relayed as sent (R-WF-1) ------------------------------------------------

CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)"


def codex_cli_headers(key: str) -> list[tuple[str, str]]:
    """What Codex CLI 0.171.0 sends (captured), pointed at SubLane with a client key."""
    return [
        ("x-codex-beta-features", "remote_compaction_v2"),
        ("x-codex-window-id", "019b-thread:0"),
        ("x-codex-turn-metadata", '{"session_id":"019b-thread","turn_id":"019b-turn"}'),
        ("x-client-request-id", "019b-thread"),
        ("session-id", "019b-thread"),
        ("thread-id", "019b-thread"),
        ("Accept", "text/event-stream"),
        ("Content-Type", "application/json"),
        ("Authorization", f"Bearer {key}"),
        ("originator", "codex_exec"),
        ("User-Agent", CODEX_UA),
        ("Accept-Encoding", "zstd,gzip"),
    ]


def codex_cli_body(model: str) -> bytes:
    # Codex writes compact JSON with non-ASCII unescaped and no `instructions` (0.171.0)
    return (
        (
            '{"model":"MODEL","stream":true,"input":[{"type":"message","id":"msg_1","role":"developer",'
            '"content":[{"type":"input_text","text":"You are Codex — été"}]},{"type":"message",'
            '"role":"user","content":[{"type":"input_text","text":"say hi"}]}],"tools":[],'
            '"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium"},'
            '"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"019b-thread",'
            '"text":{"verbosity":"low"},"client_metadata":{"x-codex-window-id":"019b-thread:0"}}'
        )
        .replace("MODEL", model)
        .encode()
    )


async def post_as_codex(h, key: str, body: bytes) -> tuple[int, bytes]:
    async with aiohttp.ClientSession(skip_auto_headers=("User-Agent", "Accept-Encoding")) as http:
        async with http.post(
            h.url + "/v1/responses", data=body, headers=codex_cli_headers(key)
        ) as response:
            return response.status, await response.read()


def forwarded(seen) -> dict[str, str]:
    return {name.lower(): value for name, value in seen.header_items}


async def test_codex_cli_reaches_the_backend_as_it_sent(ready):
    h, key = ready
    body = codex_cli_body("gpt-5.5")
    status, answer = await post_as_codex(h, key, body)
    assert status == 200 and b"response.completed" in answer
    seen = h.codex.seen[-1]
    assert seen.raw == body  # the same bytes, not a re-serialised copy
    assert (seen.path, seen.query) == ("/responses", "")
    sent = {name.lower(): value for name, value in codex_cli_headers(key)}
    got = forwarded(seen)
    for name, value in sent.items():
        if name != "authorization":
            assert got[name] == value, name
    assert got["authorization"] == "Bearer tok-sub" and got["chatgpt-account-id"] == "acct-sub"
    assert key not in json.dumps(seen.header_items)
    # nothing of SubLane's own was added besides the credential and the connection's headers
    assert set(got) - set(sent) == {"chatgpt-account-id", "host", "content-length"}
    (record,) = records(h)
    assert (record.outcome, record.input_tokens) == ("success", 20)


async def test_a_changed_model_name_changes_only_its_bytes(ready):
    h, key = ready
    body = codex_cli_body("codex/gpt-5.5")
    status, _ = await post_as_codex(h, key, body)
    assert status == 200
    assert h.codex.seen[-1].raw == body.replace(b'"codex/gpt-5.5"', b'"gpt-5.5"', 1)


async def test_other_clients_are_still_shaped_for_the_backend(ready):
    """Only Codex's own client is relayed as sent: an SDK body is shaped (it may carry what
    the backend refuses), even when it copies Codex's originator."""
    h, key = ready
    await oai(h, key, default_headers={"originator": "codex_exec"}).responses.create(
        model="gpt-5.5", input="hi", temperature=0.5
    )
    seen = h.codex.seen[-1]
    assert "temperature" not in seen.body and seen.raw != b""
    assert seen.headers["originator"] == "codex_cli_rs"
    # SubLane's own name on what it shaped, not the SDK's nor Codex's (PROTOCOLS.md)
    assert seen.headers["User-Agent"] == f"sublane-desktop/{__version__}"


# --- the model list ----------------------------------------------------------------------------


async def test_the_model_list_asks_as_a_current_client(ready):
    h, key = ready
    listed = [m.id async for m in oai(h, key).models.list()]
    assert "gpt-brand-new-6" in listed  # hidden from clients older than 0.150.0
    assert h.codex.models_versions[-1] == "0.171.0"


async def test_the_client_version_is_a_validated_setting(ready):
    h, _ = ready
    await h.service.update_settings({"codex.client_version": "0.180.1"})
    assert h.service.settings["codex.client_version"] == "0.180.1"
    for bad in ("", "latest", "0.1&x=y", 171, None):
        with pytest.raises(ValueError, match=r"codex\.client_version"):
            await h.service.update_settings({"codex.client_version": bad})
    assert h.service.settings["codex.client_version"] == "0.180.1"


async def test_a_codex_cli_socket_turn_goes_up_as_its_http_request_would(ready):
    """The socket route sends each turn upstream as an HTTP POST. For Codex CLI it keeps what
    it can: every header of the upgrade request but the WebSocket handshake's own and the
    socket beta (plus the JSON and event-stream types Codex sends over HTTP), and the message's
    fields in their order, compact and unescaped as Codex writes its HTTP bodies, `stream: true`
    after the model where Codex's HTTP body has it, `client_metadata` kept (Codex sends it over
    HTTP too) but for its socket-only `x-codex-ws-*` keys."""
    h, key = ready
    headers = [
        (name, value)
        for name, value in codex_cli_headers(key)
        if name not in ("Accept", "Content-Type")
    ] + [("OpenAI-Beta", "responses_websockets=2026-02-06")]
    message = {
        "type": "response.create",
        "model": "gpt-5.5",
        "input": [user("héllo")],
        "store": False,
        "client_metadata": {
            "x-codex-window-id": "019b-thread:0",
            "x-codex-turn-metadata": "turn-2",
            "x-codex-ws-stream-request-start-ms": "1796514189594",
        },
    }
    async with aiohttp.ClientSession(skip_auto_headers=("User-Agent", "Accept")) as http:
        async with http.ws_connect(h.url + "/v1/responses", headers=headers) as ws:
            await ws.send_str(json.dumps(message))
            while True:
                event = json.loads((await ws.receive()).data)
                if event["type"] in ("response.completed", "error"):
                    break
    assert event["type"] == "response.completed"
    seen = h.codex.seen[-1]
    assert (
        seen.raw
        == (
            '{"model":"gpt-5.5","stream":true,"input":[{"type":"message","role":"user","content":'
            '[{"type":"input_text","text":"héllo"}]}],"store":false,'
            '"client_metadata":{"x-codex-window-id":"019b-thread:0",'
            '"x-codex-turn-metadata":"turn-2"}}'
        ).encode()
    )
    got = forwarded(seen)
    # the connection's turn metadata header carries this turn's, as Codex sends it over HTTP
    assert got["x-codex-turn-metadata"] == "turn-2"
    headers = [(n, v) for n, v in headers if n != "x-codex-turn-metadata"]
    assert (got["content-type"], got["accept"]) == ("application/json", "text/event-stream")
    for name, value in headers:
        if name.lower() not in ("authorization", "openai-beta"):
            assert got[name.lower()] == value, name
    assert "openai-beta" not in got and not any(n.startswith("sec-websocket") for n in got)
    assert got["authorization"] == "Bearer tok-sub" and got["originator"] == "codex_exec"


async def test_codex_cli_compaction_is_relayed_as_sent(ready):
    h, key = ready
    body = b'{"model":"gpt-5.5","input":[],"instructions":"x"}'
    async with aiohttp.ClientSession(skip_auto_headers=("User-Agent", "Accept-Encoding")) as http:
        async with http.post(
            h.url + "/v1/responses/compact", data=body, headers=codex_cli_headers(key)
        ) as response:
            assert response.status == 200
    seen = h.codex.seen[-1]
    assert (seen.path, seen.raw) == ("/responses/compact", body)
    assert forwarded(seen)["x-codex-window-id"] == "019b-thread:0"


async def test_a_compressed_codex_cli_body_goes_on_decoded_without_its_coding(ready):
    """Codex compresses request bodies for some logins (zstd, gzip); the server decodes them,
    so the decoded bytes go on and `Content-Encoding` stays behind."""
    import gzip

    h, key = ready
    body = codex_cli_body("gpt-5.5")
    async with aiohttp.ClientSession(skip_auto_headers=("User-Agent", "Accept-Encoding")) as http:
        async with http.post(
            h.url + "/v1/responses",
            data=gzip.compress(body),
            headers=[*codex_cli_headers(key), ("Content-Encoding", "gzip")],
        ) as response:
            assert response.status == 200
    seen = h.codex.seen[-1]
    assert seen.raw == body and "content-encoding" not in forwarded(seen)
