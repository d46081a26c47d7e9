"""The fake Anthropic upstream refuses what the real API refuses, in its status and words
(SPEC R-WF-7; docs/upstreams.md lists each rule and its source). A fake that let these through
would let SubLane's tests pass against requests the real API turns away."""

from __future__ import annotations

import gzip

import aiohttp

from tests.fake_upstream import CLAUDE_CODE_HEADERS, CLAUDE_CODE_ONLY, OAUTH_NOT_SUPPORTED, Reply

ASK = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
VERSION = {"anthropic-version": "2023-06-01"}
OAUTH = {"Authorization": "Bearer sk-ant-oat01-t", **VERSION}


async def call(method: str, url: str, **kw):
    async with aiohttp.ClientSession() as s, s.request(method, url, **kw) as r:
        return r.status, await r.json(content_type=None)


async def test_an_oauth_token_needs_the_oauth_beta_on_messages_and_usage(upstream):
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        status, body = await call("POST", upstream.url + path, json=ASK, headers=OAUTH)
        assert (status, body["error"]["type"]) == (401, "authentication_error")
        assert body["error"]["message"] == OAUTH_NOT_SUPPORTED
    status, _ = await call("GET", upstream.url + "/api/oauth/usage", headers=OAUTH)
    assert status == 401
    beta = {**OAUTH, "anthropic-beta": "claude-code-20250219, oauth-2025-04-20"}
    # (with the beta, a client that is not Claude Code meets the next rule, tested below)
    claude_code = {**beta, **CLAUDE_CODE_HEADERS}
    assert (await call("POST", upstream.url + "/v1/messages", json=ASK, headers=claude_code))[
        0
    ] == 200
    assert (await call("GET", upstream.url + "/api/oauth/usage", headers=beta))[0] == 200


async def test_the_model_list_takes_no_oauth_token_whatever_its_betas(upstream):
    beta = {**OAUTH, "anthropic-beta": "oauth-2025-04-20"}
    status, body = await call("GET", upstream.url + "/v1/models", headers=beta)
    assert (status, body["error"]["message"]) == (401, OAUTH_NOT_SUPPORTED)
    keyed = {"x-api-key": "sk-ant-api03-k", **VERSION}
    assert (await call("GET", upstream.url + "/v1/models", headers=keyed))[0] == 200


async def test_a_request_needs_the_version_header_and_a_json_body(upstream):
    keyed = {"x-api-key": "sk-ant-api03-k"}
    status, body = await call("POST", upstream.url + "/v1/messages", json=ASK, headers=keyed)
    assert (status, body["error"]["type"]) == (400, "invalid_request_error")
    assert "anthropic-version" in body["error"]["message"]
    status, body = await call(
        "POST", upstream.url + "/v1/messages", data=b"{not json", headers={**keyed, **VERSION}
    )
    assert (status, body["error"]["type"]) == (400, "invalid_request_error")
    assert upstream.seen[-1].raw == b"{not json"  # recorded as it arrived


async def test_a_refresh_token_is_spent_by_its_first_use(upstream):
    upstream.refresh_grants["rt-1"] = ("at-2", "rt-2")
    grant = {"grant_type": "refresh_token", "refresh_token": "rt-1", "client_id": "c"}
    status, body = await call("POST", upstream.url + "/v1/oauth/token", json=grant)
    assert (status, body["refresh_token"]) == (200, "rt-2")
    status, body = await call("POST", upstream.url + "/v1/oauth/token", json=grant)
    assert (status, body["error"]) == (400, "invalid_grant")
    assert body["error_description"] == "Refresh token not found or invalid"


async def test_a_gzip_answer_only_for_a_client_that_offers_gzip(upstream):
    upstream.script(None, Reply(encoding="gzip"), Reply(encoding="gzip"))
    headers = {"x-api-key": "sk-ant-api03-k", **VERSION}
    async with aiohttp.ClientSession(auto_decompress=False) as s:
        offered = {**headers, "Accept-Encoding": "gzip"}
        async with s.post(upstream.url + "/v1/messages", json=ASK, headers=offered) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            assert b"Hello from the fake upstream." in gzip.decompress(await r.read())
        plain = {**headers, "Accept-Encoding": "identity"}
        async with s.post(upstream.url + "/v1/messages", json=ASK, headers=plain) as r:
            assert "Content-Encoding" not in r.headers
            assert b"Hello from the fake upstream." in await r.read()


async def test_an_oauth_token_serves_claude_code_only(upstream):
    """R-WF-2: Anthropic's words for any other client on a subscription token."""
    beta = {**OAUTH, "anthropic-beta": "oauth-2025-04-20"}
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        for headers in (
            beta,
            {**beta, "User-Agent": CLAUDE_CODE_HEADERS["User-Agent"]},  # one mark only
            {**beta, "x-app": "cli"},
        ):
            status, body = await call("POST", upstream.url + path, json=ASK, headers=headers)
            assert (status, body["error"]["type"]) == (400, "invalid_request_error")
            assert body["error"]["message"] == CLAUDE_CODE_ONLY
        claude_code = {**beta, **CLAUDE_CODE_HEADERS}
        assert (await call("POST", upstream.url + path, json=ASK, headers=claude_code))[0] == 200
    keyed = {"x-api-key": "sk-ant-api03-k", **VERSION}  # an API key serves any client
    assert (await call("POST", upstream.url + "/v1/messages", json=ASK, headers=keyed))[0] == 200
    assert upstream.client_refusals == 6
