"""The pool runtime end to end: the anthropic SDK -> SubLane -> fake upstream (SPEC §4, §7)."""

from __future__ import annotations

import asyncio

import aiohttp
import anthropic
import pytest

from tests.conftest import fake_env
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


def sdk(h, key, **headers):
    return anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **headers},
    )


async def until(predicate, what: str, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


async def api(h, method, path, body=None, *, token=None, headers=None):
    hdrs = {"Authorization": f"Bearer {token or h.service.admin_token}", **(headers or {})}
    async with aiohttp.ClientSession() as s:
        async with s.request(method, h.url + path, json=body, headers=hdrs) as r:
            return r.status, await r.json(content_type=None)


async def test_bound_conversation_on_a_busy_account_gets_429_while_others_flow(harness):
    h = harness
    await h.add_account("a", "tok-a", limit=1)
    await h.add_account("b", "tok-b", limit=1)
    key = await h.create_key()
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    client = sdk(h, key, **{"x-claude-code-session-id": "sess-1"})
    async with client.messages.stream(**BODY) as first:
        await until(lambda: h.service.pool.in_flight == 1, "first stream admitted")
        with pytest.raises(anthropic.RateLimitError) as err:
            await client.messages.create(**BODY)
        response = err.value.response
        assert err.value.body["error"]["code"] == "account_busy"
        assert 1 <= int(response.headers["retry-after"]) <= 300
        assert response.headers["x-request-id"].startswith("req_")
        # Unbound traffic meanwhile goes to the other account.
        await sdk(h, key).messages.create(**BODY)
        gate.set()
        await first.get_final_message()
    bound_token = h.upstream.seen[0].token
    assert h.upstream.seen[-1].token != bound_token
    assert h.service.pool.in_flight == 0


async def test_runtime_endpoint_shape_and_levers(harness):
    h = harness
    acc = await h.add_account("work")
    status, body = await api(h, "GET", "/api/accounts/runtime")
    assert status == 200 and body["cap"] == 8 and body["in_flight"] == 0
    (account,) = body["accounts"]
    for field in (
        "id",
        "name",
        "provider",
        "state",
        "in_flight",
        "max_concurrency",
        "paused",
        "pinned_until",
        "cooldown_until",
        "failure_streak",
        "current",
        "fable_current",
        "gauges",
    ):
        assert field in account
    assert set(account["gauges"]) == {"five_hour", "seven_day", "fable"}
    assert account["gauges"]["fable"]["cold"] is True

    status, body = await api(h, "PATCH", f"/api/accounts/{acc}/limits", {"max_concurrency": 5})
    assert status == 200 and body["max_concurrency"] == 5
    assert h.service.pool.accounts[acc].max_concurrency == 5

    h.service.pool.accounts[acc].cooldown_until = h.service.clock.now() + 60
    h.service.pool.accounts[acc].failure_streak = 2
    status, body = await api(h, "POST", f"/api/accounts/{acc}/resume", {})
    assert status == 200 and body["state"] == "ok" and body["failure_streak"] == 0

    status, body = await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": True})
    assert status == 200 and body["state"] == "paused"


@pytest.mark.parametrize("bad", [0, 9, "2", None, 1.5, True])
async def test_bad_limits_are_400_and_change_nothing(harness, bad):
    acc = await harness.add_account("work")
    status, body = await api(
        harness, "PATCH", f"/api/accounts/{acc}/limits", {"max_concurrency": bad}
    )
    assert status == 400 and "1 to 8" in body["error"]["message"]
    assert body["error"]["type"] == "invalid_request_error"
    assert harness.service.pool.accounts[acc].max_concurrency == 2


async def test_management_guards(harness):
    h = harness
    acc = await h.add_account("work")
    status, _ = await api(h, "PATCH", f"/api/accounts/{acc}/limits", {})
    assert status == 400  # missing field
    status, _ = await api(h, "PATCH", "/api/accounts/999/limits", {"max_concurrency": 3})
    assert status == 404
    status, _ = await api(h, "GET", "/api/accounts/runtime", token="wrong")
    assert status == 401
    key = await h.create_key()
    status, _ = await api(h, "GET", "/api/accounts/runtime", token=key)
    assert status == 401  # a client key is not the administrator token
    async with aiohttp.ClientSession() as s:
        async with s.patch(
            h.url + f"/api/accounts/{acc}/limits",
            data='{"max_concurrency":3}',
            headers={
                "Authorization": f"Bearer {h.service.admin_token}",
                "Content-Type": "text/plain",
            },
        ) as r:
            assert r.status == 415
    assert h.service.pool.accounts[acc].max_concurrency == 2


async def test_upstream_429_cools_the_account_and_bound_conversation_waits(harness):
    h = harness
    acc = await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.script("tok-a", Reply(status=429, error_type="rate_limit_error", retry_after="40"))
    client = sdk(h, key, session_id="conv-9")
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**BODY)  # first placement goes to account a (id order)
    view = h.service.account_view(acc)
    assert view["state"] == "cooling" and view["failure_streak"] == 1
    with pytest.raises(anthropic.RateLimitError) as err:
        await client.messages.create(**BODY)
    assert err.value.body["error"]["code"] == "account_cooling"
    assert 35 <= int(err.value.response.headers["retry-after"]) <= 40
    # Independent traffic is served by the other account meanwhile.
    await sdk(h, key).messages.create(**BODY)
    assert h.upstream.seen[-1].token == "tok-b"


async def test_401_marks_auth_failed(harness):
    h = harness
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
        "tok-a",
        Reply(status=401, error_type="authentication_error"),
        Reply(status=401, error_type="authentication_error"),
    )
    with pytest.raises(anthropic.AuthenticationError):
        await sdk(h, key).messages.create(**BODY)
    assert h.service.account_view(acc)["state"] == "auth_failed"


async def test_restart_keeps_bindings_and_cooldowns(tmp_path, upstream, secret_store):
    from sublane_desktop.service import Service
    from tests.conftest import Harness

    def fresh():
        return Service(
            tmp_path / "data",
            port=0,
            secret_store=secret_store,
            env=fake_env(upstream),
        )

    service = fresh()
    await service.start()
    h = Harness(service, upstream)
    await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    key = await h.create_key()
    await sdk(h, key, session_id="s-1").messages.create(**BODY)  # binds to a
    await sdk(h, key, session_id="s-2").messages.create(**BODY)  # rotation: binds to b
    service.pool.accounts[b].cooldown_until = service.clock.now() + 300
    service.pool.accounts[b].failure_streak = 3
    service.pool._persist.save_runtime(b, service.pool.accounts[b].runtime_fields())
    await service.stop()

    again = fresh()
    await again.start()
    try:
        h2 = Harness(again, upstream)
        assert again.pool.accounts[b].failure_streak == 3
        assert again.account_view(b)["state"] == "cooling"
        await sdk(h2, key, session_id="s-1").messages.create(**BODY)
        assert upstream.seen[-1].token == "tok-a"
        with pytest.raises(anthropic.RateLimitError) as err:
            await sdk(h2, key, session_id="s-2").messages.create(**BODY)
        assert err.value.body["error"]["code"] == "account_cooling"
    finally:
        await again.stop()


async def test_persistence_failure_keeps_the_cooldown(harness, caplog):
    h = harness
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()

    async def broken(fn):
        raise OSError("disk full: sk-ant-secret-should-not-log")

    h.service.store.write = broken
    h.records_may_drop = True  # the request's record cannot be saved either, by design here
    h.upstream.script("tok-a", Reply(status=529, error_type="overloaded_error"))
    with pytest.raises(anthropic.APIStatusError):
        await sdk(h, key).messages.create(**BODY)
    await until(lambda: "could not persist" in caplog.text, "the sanitized log line")
    assert "sk-ant-secret" not in caplog.text
    assert h.service.account_view(acc)["state"] == "cooling"
    with pytest.raises(anthropic.APIStatusError) as err:
        await sdk(h, key).messages.create(**BODY)
    assert err.value.body["error"]["code"] == "account_cooling"


@pytest.mark.parametrize("retry_after", ["soon", "-5", "NaN", "1e99", ""])
async def test_unparseable_retry_after_falls_back_to_the_ladder(harness, retry_after):
    h = harness
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
        "tok-a", Reply(status=429, error_type="rate_limit_error", retry_after=retry_after)
    )
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**BODY)
    account = h.service.pool.accounts[acc]
    assert account.failure_streak == 1
    assert account.cooldown_until - h.service.clock.now() == pytest.approx(15, abs=1)


# Without a usable upstream value the client waits as long as the account cools (R-FT-4).
@pytest.mark.parametrize(
    "upstream_value, expected", [("3600", "300"), ("0.2", "1"), (None, "15"), ("12", "12")]
)
async def test_relayed_429_retry_after_is_bounded(harness, upstream_value, expected):
    h = harness
    await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
        "tok-a", Reply(status=429, error_type="rate_limit_error", retry_after=upstream_value)
    )
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(**BODY)
    assert err.value.response.headers["retry-after"] == expected


async def test_a_changed_limit_is_stored_and_survives_a_catalog_reload(harness):
    """R-POOL-10: the limit is an account setting, written to SQLite, not only held in memory."""
    h = harness
    acc = await h.add_account("work")
    status, body = await api(h, "PATCH", f"/api/accounts/{acc}/limits", {"max_concurrency": 5})
    assert status == 200 and body["max_concurrency"] == 5
    await h.add_account("other")  # re-reads every account from the database
    status, body = await api(h, "GET", "/api/accounts/runtime")
    assert [a["max_concurrency"] for a in body["accounts"] if a["id"] == acc] == [5]


async def test_disable_frees_the_conversation_and_enable_is_a_new_revision(harness):
    h = harness
    a = await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    client = sdk(h, key, session_id="conv-1")
    await client.messages.create(**BODY)
    first = h.upstream.seen[-1].token
    disabled_id = a if first == "tok-a" else a + 1
    status, view = await api(h, "POST", f"/api/accounts/{disabled_id}/disable", {})
    assert status == 200 and view["state"] == "disabled"
    assert disabled_id not in h.service.pool.bindings.values()
    await client.messages.create(**BODY)
    assert h.upstream.seen[-1].token != first  # the conversation moved on
    revision = h.service.pool.accounts[disabled_id].revision
    status, view = await api(h, "POST", f"/api/accounts/{disabled_id}/enable", {})
    assert status == 200 and view["state"] == "ok"
    await h.service.store.write(lambda: None)  # the writer thread is FIFO: the save is done
    stored = await h.service.store.read(
        lambda: h.service.store.db.execute_sql(
            "SELECT enabled, revision FROM accounts WHERE id = ?", (disabled_id,)
        ).fetchone()
    )
    assert tuple(stored) == (1, revision + 1)
    status, _ = await api(h, "POST", "/api/accounts/999/disable", {})
    assert status == 404
