"""The fakes' authorize pages and code exchanges refuse what the real servers refuse (R-LOGIN-1,
R-WF-7; docs/upstreams.md lists each rule with its source): a fake that took a wrong verifier,
a reused code or another redirect would let a broken sign-in pass its tests.

Each test runs the same rule against the three fakes: Claude (JSON, the state in the body),
Codex (a form, Hydra's words) and Google (a form with the client secret).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest

from sublane_desktop.accounts import pkce
from tests.fake_antigravity import ANTIGRAVITY_CLIENT, FakeAntigravity
from tests.fake_codex import FakeCodex
from tests.fake_upstream import FakeAnthropic


@dataclass
class Side:
    fake: Any
    authorize: str  # path
    token: str  # path
    client_id: str
    redirect: str  # a redirect URI the fake accepts
    body: str  # json | form
    secret: str | None = None


async def started(which: str) -> Side:
    if which == "claude":
        fake: Any = FakeAnthropic()
        await fake.start()
        return Side(
            fake,
            "/oauth/authorize",
            "/v1/oauth/token",
            "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
            "http://localhost:40001/callback",
            "json",
        )
    if which == "codex":
        fake = FakeCodex()
        await fake.start()
        return Side(
            fake,
            "/oauth/authorize",
            "/oauth/token",
            "app_EMoamEEZ73f0CkXaXp7hrann",
            "http://localhost:1455/auth/callback",
            "form",
        )
    fake = FakeAntigravity()
    await fake.start()
    return Side(
        fake,
        "/o/oauth2/v2/auth",
        "/token",
        ANTIGRAVITY_CLIENT[0],
        "http://localhost:51121/oauth-callback",
        "form",
        ANTIGRAVITY_CLIENT[1],
    )


@pytest.fixture(params=["claude", "codex", "google"])
async def side(request: pytest.FixtureRequest):
    s = await started(request.param)
    yield s
    await s.fake.stop()


async def authorize(side: Side, **change: str) -> tuple[int, dict[str, str], pkce.Pkce]:
    """The authorize page: (status, the redirect's query, the PKCE pair used)."""
    pair = pkce.new_pkce()
    query = {
        "response_type": "code",
        "client_id": side.client_id,
        "redirect_uri": side.redirect,
        "scope": "x",
        "code_challenge": pair.challenge,
        "code_challenge_method": "S256",
        "state": "s-1",
        **change,
    }
    query = {k: v for k, v in query.items() if v != ""}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{side.fake.url}{side.authorize}?{urlencode(query)}", allow_redirects=False) as r,
    ):
        if r.status != 302:
            return r.status, {}, pair
        where = urlsplit(r.headers["Location"])
        assert f"{where.scheme}://{where.netloc}{where.path}" == query["redirect_uri"]
        return 302, {k: v[0] for k, v in parse_qs(where.query).items()}, pair


async def exchange(side: Side, **fields: str) -> tuple[int, dict[str, Any]]:
    body = {"grant_type": "authorization_code", "client_id": side.client_id, **fields}
    if side.secret and "client_secret" not in body:
        body["client_secret"] = side.secret
    kw: dict[str, Any] = {"json": body} if side.body == "json" else {"data": body}
    async with aiohttp.ClientSession() as http, http.post(side.fake.url + side.token, **kw) as r:
        return r.status, await r.json(content_type=None)


async def good(side: Side) -> dict[str, str]:
    offline = {"access_type": "offline", "prompt": "consent"} if side.secret else {}
    status, query, pair = await authorize(side, **offline)
    assert status == 302 and query["state"] == "s-1"
    return {
        "code": query["code"],
        "redirect_uri": side.redirect,
        "code_verifier": pair.verifier,
        "state": query["state"],
    }


async def test_the_exchange_answers_tokens_once(side: Side) -> None:
    fields = await good(side)
    status, answer = await exchange(side, **fields)
    assert status == 200 and answer["access_token"] and answer["refresh_token"]
    # codes are single-use (RFC 6749 §4.1.2)
    status, answer = await exchange(side, **fields)
    assert status in (400, 401) and answer["error"] == "invalid_grant"


async def test_a_verifier_that_is_not_the_challenges_is_refused(side: Side) -> None:
    fields = await good(side)
    status, answer = await exchange(side, **{**fields, "code_verifier": "x" * 64})
    assert status in (400, 401) and answer["error"] == "invalid_grant"
    assert "verifier" in answer["error_description"].lower()
    assert (await exchange(side, **fields))[0] == 200  # a refused try does not spend the code


async def test_another_redirect_than_the_authorize_requests_is_refused(side: Side) -> None:
    fields = await good(side)
    status, answer = await exchange(side, **{**fields, "redirect_uri": side.redirect + "x"})
    assert status == 400
    assert answer["error"] in ("invalid_grant", "redirect_uri_mismatch")


async def test_another_client_is_refused(side: Side) -> None:
    fields = await good(side)
    status, answer = await exchange(side, **fields, client_id="someone-else")
    assert status in (400, 401) and answer["error"] == "invalid_client"


async def test_an_unknown_code_is_refused(side: Side) -> None:
    fields = await good(side)
    status, answer = await exchange(side, **{**fields, "code": "never-issued"})
    assert status in (400, 401) and answer["error"] == "invalid_grant"


@pytest.mark.parametrize(
    "change",
    [
        {"client_id": "someone-else"},
        {"redirect_uri": "http://localhost:1/elsewhere"},
        {"redirect_uri": "https://evil.example/callback"},
        {"code_challenge": ""},
        {"code_challenge_method": "plain"},
        {"state": ""},
        {"response_type": "token"},
    ],
)
async def test_the_authorize_page_refuses_a_bad_request(side: Side, change: dict[str, str]):
    status, query, _ = await authorize(side, **change)
    assert status == 400 and query == {}


async def test_claude_checks_the_state_in_the_exchange() -> None:
    side = await started("claude")
    try:
        fields = await good(side)
        status, answer = await exchange(side, **{**fields, "state": "another"})
        assert (status, answer["error"]) == (400, "invalid_grant")
        assert "state" in answer["error_description"]
        # and takes JSON only
        async with (
            aiohttp.ClientSession() as http,
            http.post(side.fake.url + side.token, data=fields) as r,
        ):
            assert r.status == 400
    finally:
        await side.fake.stop()


async def test_codex_registers_only_its_two_loopback_ports() -> None:
    side = await started("codex")
    try:
        for port, status in ((1455, 302), (1457, 302), (1456, 400)):
            redirect = f"http://localhost:{port}/auth/callback"
            assert (await authorize(side, redirect_uri=redirect))[0] == status
    finally:
        await side.fake.stop()


async def test_google_needs_the_installed_apps_client_secret() -> None:
    side = await started("google")
    try:
        fields = await good(side)
        status, answer = await exchange(side, **fields, client_secret="wrong")
        assert (status, answer["error"]) == (401, "invalid_client")
        assert (await exchange(side, **fields))[0] == 200
    finally:
        await side.fake.stop()


async def test_google_gives_a_refresh_token_only_to_an_offline_consent() -> None:
    side = await started("google")
    try:
        for change in ({}, {"access_type": "offline"}, {"prompt": "consent"}):
            status, query, pair = await authorize(side, **change)
            status, answer = await exchange(
                side, code=query["code"], redirect_uri=side.redirect, code_verifier=pair.verifier
            )
            assert status == 200 and "refresh_token" not in answer
        status, query, pair = await authorize(side, access_type="offline", prompt="consent")
        status, answer = await exchange(
            side, code=query["code"], redirect_uri=side.redirect, code_verifier=pair.verifier
        )
        assert answer["refresh_token"] == "1//signin-4"
    finally:
        await side.fake.stop()
