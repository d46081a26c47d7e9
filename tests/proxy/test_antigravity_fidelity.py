"""Antigravity as Cloud Code `v1internal` really behaves (SPEC R-WF-5): the strict fake
(tests/fake_antigravity.py) refuses what Google refuses, and SubLane meets each rule: a current
client version (a setting) in the user agent, an Antigravity `ideType`, `onboardUser` for a login
without a project (and `auth_failed` in words when even that gives none), `requestType` and a
stable per-conversation `sessionId` in every envelope, the host order with its fallback, model
names from `fetchAvailableModels`, a `QUOTA_EXHAUSTED` 429 resting only its model family until
the reset it names, and `verify` refreshing on 403 as on 401. docs/upstreams.md lists each rule
with its public source. Real `anthropic` SDK, fake clock."""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import anthropic
import pytest

from sublane_desktop.core.affinity import conversation_digest
from sublane_desktop.gui import dashboard, pool_status
from sublane_desktop.providers import antigravity
from sublane_desktop.service import Service
from tests.conftest import Harness
from tests.fake_antigravity import OUTDATED, client_version

ASK = [{"role": "user", "content": "hi"}]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


async def start(tmp_path, upstream, google, secret_store, clock, env) -> Harness:
    service = Service(tmp_path / "data", port=0, secret_store=secret_store, clock=clock, env=env)
    await service.start()
    h = Harness(service, upstream)
    h.clock, h.google, h.clients = clock, google, []
    h.key = await h.create_key()
    return h


async def stop(h: Harness) -> None:
    for client in h.clients:
        await client.close()
    await h.service.stop(drain_timeout=2)


@pytest.fixture(autouse=True)
def _onboarding_without_waits(monkeypatch) -> None:
    """The real operation is read every 5 s; the fake's is done after a set number of reads."""
    monkeypatch.setattr(antigravity, "ONBOARD_POLL_SECONDS", 0.0)


@pytest.fixture
async def clocked(tmp_path, upstream, antigravity_upstream, secret_store, clock):
    env = {
        "SUBLANE_ANTIGRAVITY_BASE_URL": antigravity_upstream.url,
        "SUBLANE_GOOGLE_OAUTH_BASE_URL": antigravity_upstream.url,
    }
    h = await start(tmp_path, upstream, antigravity_upstream, secret_store, clock, env)
    yield h
    await stop(h)


@pytest.fixture
async def hosted(tmp_path, upstream, antigravity_upstream, secret_store, clock, monkeypatch):
    """No base-URL override: SubLane's own host order, pointed at the fake's three hosts."""
    fake = antigravity_upstream
    monkeypatch.setattr(
        antigravity, "GENERATION_HOSTS", (fake.host("daily"), fake.host("production"))
    )
    monkeypatch.setattr(antigravity, "SETUP_HOSTS", (fake.host("production"), fake.host("daily")))
    env = {"SUBLANE_GOOGLE_OAUTH_BASE_URL": fake.url}
    h = await start(tmp_path, upstream, fake, secret_store, clock, env)
    yield h
    await stop(h)


def sdk(h, **headers) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=h.key, max_retries=0, default_headers=headers or None
    )
    h.clients.append(client)
    return client


async def ask(h, model: str = "gemini-3-flash", **headers):
    return await sdk(h, **headers).messages.create(model=model, max_tokens=16, messages=ASK)


async def api(h, method: str, path: str, body=None) -> tuple[int, dict]:
    async with (
        aiohttp.ClientSession() as s,
        s.request(
            method,
            h.url + path,
            json=body,
            headers={"Authorization": f"Bearer {h.service.admin_token}"},
        ) as r,
    ):
        return r.status, await r.json()


# --- the client version --------------------------------------------------------------------------


async def test_generation_names_a_current_client_version_from_the_setting(clocked):
    h = clocked
    await h.add_antigravity_account("google")
    answer = await ask(h)
    assert answer.content[0].text  # a client below 2.9.0 is refused current models
    assert {host for host, _ in h.google.host_calls} == {""}  # the environment's base URL only
    agent = h.google.seen[-1].headers["User-Agent"]
    assert agent.startswith(f"antigravity/{antigravity.DEFAULT_CLIENT_VERSION} ")
    assert client_version(agent) >= (2, 9, 0)

    await h.service.update_settings({"antigravity.client_version": "3.1.4"})
    await ask(h)
    assert h.google.seen[-1].headers["User-Agent"].startswith("antigravity/3.1.4 ")

    for bad in ("1.11.5", "2.8.9", "latest", "3.1", 3, ""):
        with pytest.raises(ValueError, match=r"antigravity\.client_version"):
            await h.service.update_settings({"antigravity.client_version": bad})
    assert h.service.settings["antigravity.client_version"] == "3.1.4"


async def test_an_outdated_client_is_refused_by_the_fake_in_googles_words(clocked):
    """The fake's rule itself: the version gate answers as Google does."""
    h = clocked
    await h.add_antigravity_account("google")
    h.service.settings["antigravity.client_version"] = "1.11.5"  # below what validation allows
    with pytest.raises(anthropic.BadRequestError) as refused:
        await ask(h)
    assert OUTDATED in str(refused.value)


# --- project: ideType, onboarding ----------------------------------------------------------------


async def test_project_discovery_says_it_is_antigravity(clocked):
    h = clocked
    await h.add_antigravity_account("google", project=None)
    await ask(h)
    metadata = h.google.load_bodies[-1]["metadata"]
    assert metadata["ideType"] == "ANTIGRAVITY" and metadata["pluginType"] == "GEMINI"
    assert h.google.seen[-1].body["project"] == "proj-fake-1"


async def test_a_login_without_a_project_is_onboarded_and_then_served(clocked):
    h = clocked
    h.google.unprovisioned.add("ya29.fresh")
    account = await h.add_antigravity_account("fresh", "ya29.fresh", project=None)
    answer = await ask(h)
    assert answer.content[0].text
    assert [c["tierId"] for c in h.google.onboard_calls] == ["free-tier"]  # the default tier
    assert h.google.onboard_calls[0]["metadata"]["ideType"] == "ANTIGRAVITY"
    assert len(h.google.operation_reads) == h.google.onboard_polls  # polled until done
    assert h.google.seen[-1].body["project"] == "proj-fake-1"
    await ask(h)  # the project is kept: no second onboarding
    assert len(h.google.onboard_calls) == 1
    _, view = await api(h, "GET", "/api/accounts/runtime")
    assert [a["state"] for a in view["accounts"] if a["id"] == account] == ["ok"]


async def test_a_login_that_onboarding_gives_no_project_is_auth_failed_in_words(clocked):
    h = clocked
    h.google.unprovisioned.add("ya29.none")
    h.google.ineligible.add("ya29.none")
    account = await h.add_antigravity_account("none", "ya29.none", project=None)
    with pytest.raises(anthropic.APIStatusError) as refused:
        await ask(h)
    assert "no Code Assist project" in str(refused.value)
    assert not h.google.seen  # never sent without a project
    view = h.service.account_view(account)
    assert view["state"] == "auth_failed"
    assert "no Code Assist project" in view["auth_reason"]
    tray = pool_status.state_text(view, h.clock.now())
    assert tray.startswith("Sign in again — ") and "no Code Assist project" in tray
    verdict = await h.service.verify(account)
    assert verdict["result"] == "auth_failed" and "no Code Assist project" in verdict["detail"]


# --- the envelope --------------------------------------------------------------------------------


async def test_every_envelope_carries_request_type_and_a_per_conversation_session(clocked):
    h = clocked
    await h.add_antigravity_account("google")
    await ask(h)  # no conversation: a session id of its own all the same
    await ask(h)
    one, two = (s.body for s in h.google.seen[-2:])
    assert one["requestType"] == two["requestType"] == "agent"
    assert (
        one["request"]["sessionId"] and one["request"]["sessionId"] != two["request"]["sessionId"]
    )
    await ask(h, **{"x-claude-code-session-id": "cc-1"})
    await ask(h, **{"x-claude-code-session-id": "cc-1"})
    await ask(h, **{"x-claude-code-session-id": "cc-2"})
    first, again, other = (s.body["request"]["sessionId"] for s in h.google.seen[-3:])
    assert first == again == conversation_digest("s:cc-1", "antigravity")
    assert other != first


# --- hosts ---------------------------------------------------------------------------------------


async def test_generation_goes_to_daily_first_and_falls_back_to_production(hosted):
    h = hosted
    await h.add_antigravity_account("google")
    await ask(h)
    assert [c for c in h.google.host_calls if c[1] == "generateContent"] == [
        ("daily", "generateContent")
    ]
    h.google.host_calls.clear()
    h.google.host_status["daily"] = 503  # no capacity on daily
    answer = await ask(h)
    assert answer.content[0].text
    assert [c for c in h.google.host_calls if c[1] == "generateContent"] == [
        ("daily", "generateContent"),
        ("production", "generateContent"),
    ]


async def test_project_setup_asks_production_first(hosted):
    h = hosted
    await h.add_antigravity_account("google", project=None)
    await ask(h)
    assert [c[0] for c in h.google.host_calls if c[1] == "loadCodeAssist"] == ["production"]


async def test_an_account_base_url_overrides_every_host(hosted):
    h = hosted
    await h.add_antigravity_account("google", base_url=h.google.host("sandbox"))
    h.google.host_status["daily"] = 503
    await ask(h)
    assert {c[0] for c in h.google.host_calls} == {"sandbox"}


# --- models ----------------------------------------------------------------------------------------


async def test_served_names_come_from_fetch_available_models(clocked):
    h = clocked
    await h.add_antigravity_account("google")
    ids = [m.id async for m in sdk(h).models.list()]
    assert set(h.google.served) <= set(ids)
    assert "gemini-3-pro-high" not in ids and "claude-sonnet-4-5" not in ids  # retired
    await ask(h, "gemini-3.1-pro-preview")  # a name clients send: the alias table
    assert h.google.seen[-1].body["model"] == "gemini-3.1-pro-high"
    with pytest.raises(anthropic.NotFoundError, match="Requested entity was not found"):
        await ask(h, "gemini-3-pro-high")


# --- QUOTA_EXHAUSTED -----------------------------------------------------------------------------


async def test_a_spent_quota_rests_only_its_family_until_the_reset_it_names(clocked):
    h = clocked
    account = await h.add_antigravity_account("google")
    resets = h.clock.now() + 4 * 3600 + 54 * 60 + 56.87563923
    h.google.exhausted["claude-sonnet-4-6"] = ("4h54m56.87563923s", iso(resets))
    with pytest.raises(anthropic.RateLimitError) as limited:
        await ask(h, "claude-sonnet-4-6")
    assert limited.value.response.headers["retry-after"] == "300"  # R-FT-4's ceiling
    sent = len(h.google.seen)
    # The account still serves Gemini, and the Claude family rests past the 2-minute freshness.
    assert (await ask(h, "gemini-3-flash")).content[0].text
    h.clock.advance(15 * 60)
    with pytest.raises(anthropic.RateLimitError, match="claude"):
        await ask(h, "claude-opus-4-6-thinking")
    assert len(h.google.seen) == sent + 1  # only the Gemini request went upstream
    view = h.service.account_view(account)
    assert view["state"] == "ok"
    assert view["family_cooldowns"] == {"claude": pytest.approx(resets, abs=1)}
    assert view["gauges"]["claude"]["utilization"] == 1.0
    tip = pool_status.tooltip_text(h.url, [view], now=h.clock.now())
    assert "google: Claude limit reached" in tip
    row = dashboard.account_row(view, h.service.settings, h.clock.now())
    claude = next(w for w in row.windows if w.window == "claude")
    assert claude.text.startswith("Claude 100% · resets in 4h 39m")  # the tray's family line
    assert row.can_clear  # "Clear cooldown" lifts the rest, as it does an account cooldown
    # The refused request read the stale account (R-GAUGE-3), and Google listed the family as
    # spent: that fresh reading gates on its own for two minutes, whatever the operator clears.
    h.clock.advance(3 * 60)
    # 18 minutes on, Google names the same reset
    h.google.exhausted["claude-sonnet-4-6"] = ("4h36m56.87563923s", iso(resets))
    await h.service.clear_cooldown(account)  # the operator lifts it: Claude goes upstream
    with pytest.raises(anthropic.RateLimitError):
        await ask(h, "claude-sonnet-4-6")
    assert len(h.google.seen) == sent + 2
    del h.google.exhausted["claude-sonnet-4-6"]
    h.clock.advance(resets - h.clock.now() + 1)
    assert (await ask(h, "claude-sonnet-4-6")).content[0].text
    assert h.service.account_view(account)["family_cooldowns"] == {}


# --- verify --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_verify_refreshes_an_expired_token_google_answers_401_or_403(clocked, status):
    h = clocked
    # A login whose expiry was never told: a refused token may simply have lapsed (a metadata
    # call refreshes no token it knows is good, R-WF-3).
    account = await h.add_antigravity_account("google", "ya29.old", expires_at=None)
    (h.google.expired if status == 401 else h.google.forbidden).add("ya29.old")
    h.google.refresh_tokens["1//rt-google"] = "ya29.new"
    verdict = await h.service.verify(account)
    assert verdict["result"] == "ok"
    assert h.google.quota_reads[-1][0] == "ya29.new"


async def test_generation_refreshes_on_403_too(clocked):
    h = clocked
    await h.add_antigravity_account("google", "ya29.old")
    h.google.forbidden.add("ya29.old")
    h.google.refresh_tokens["1//rt-google"] = "ya29.new"
    assert (await ask(h)).content[0].text
    assert h.google.seen[-1].token == "ya29.new"
