"""Request history end to end: real `anthropic` SDK -> SubLane -> fake upstream, then the
history API (R-REC-1..6, SPEC §7)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.history import MAX_AGE_SECONDS, InvalidQuery, parse_query
from sublane_desktop.service import Service
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.models import Account
from tests.conftest import Harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

PROMPT = "PROMPT-TEXT-never-stored-7f3a"
SESSION = "sess-SECRET-5d1e2c"
TOKEN = "sk-ant-oat01-UPSTREAM-SECRET-91b2"


def client(h: Harness, key: str, **kw: Any) -> anthropic.AsyncAnthropic:
    headers = {**CLAUDE_CODE_HEADERS, **kw.pop("default_headers", {})}
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=headers, **kw
    )


def cached_client(h: Harness, key: str) -> anthropic.AsyncAnthropic:
    """One SDK client per key and test: building one costs ~30 ms (TLS context)."""
    clients = h.__dict__.setdefault("_sdk_clients", {})
    if key not in clients:
        clients[key] = client(h, key)
    return clients[key]


async def ask(h: Harness, key: str, text: str = "hi", **kw: Any) -> str:
    """One non-streaming request; returns its SubLane request id."""
    raw = await cached_client(h, key).messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": text}], **kw
    )
    return raw.headers["x-request-id"]


async def api(
    h: Harness, path: str, token: str | None, params: Any = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s:
        async with s.get(h.url + path, params=params, headers=headers) as r:
            return r.status, await r.json()


async def walk(
    h: Harness, path: str, token: str, params: list[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """Every page, following next_cursor."""
    items: list[dict[str, Any]] = []
    cursor: int | None = None
    while True:
        query = list(params or []) + ([("cursor", str(cursor))] if cursor else [])
        status, page = await api(h, path, token, query)
        assert status == 200, page
        assert len(page["items"]) <= 50
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


async def member_key(h: Harness, user: str, name: str = "laptop") -> tuple[str, int, int]:
    """A client key for `user` (created on first use): (key, key id, user id)."""

    def write() -> tuple[str, int, int]:
        try:
            u = repo.find_user(user)
        except repo.NotFound:
            u = repo.add_user(user)
        row, key = repo.create_key(name, u, repo.get_or_create_group("default"))
        return key, row.id, u.id

    return await h.service.store.write(write)


class RecordWaiter:
    """Counts committed records through the bus, so tests wait on an event, never a sleep."""

    def __init__(self, service: Service) -> None:
        self.count = 0
        self._changed = asyncio.Event()
        service.bus.subscribe("records.added", self._on)

    def _on(self, topic: str, payload: dict[str, Any]) -> None:
        self.count += payload["count"]
        self._changed.set()

    async def until(self, n: int, timeout: float = 1.0) -> None:
        async def wait() -> None:
            while self.count < n:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), timeout)


# --- the write path ---------------------------------------------------------------------------


async def test_a_finished_request_is_visible_within_a_second(harness):
    account_id = await harness.add_account("work")
    key, key_id, user_id = await member_key(harness, "alice")
    waiter = RecordWaiter(harness.service)
    request_id = await ask(harness, key)
    await waiter.until(1, timeout=1.0)  # no flush: the writer is prompt on its own
    status, page = await api(harness, "/api/me/requests", key)
    assert status == 200 and page["next_cursor"] is None
    [item] = page["items"]
    assert item["request_id"] == request_id
    assert (item["user_id"], item["key_id"], item["group_id"]) == (user_id, key_id, 1)
    assert (item["provider"], item["model"], item["protocol"], item["operation"]) == (
        "anthropic",
        "claude-sonnet-4-5",
        "anthropic",
        "messages",
    )
    assert item["outcome"] == "success" and item["error_code"] is None
    assert item["upstream_status"] == 200
    # Anthropic: total input = 12 input + 30 cache read + 8 cache creation; cached = reads.
    assert (item["input_tokens"], item["output_tokens"], item["cached_tokens"]) == (50, 7, 30)
    assert item["cache_hit_rate"] == "60%"
    assert item["first_token_ms"] is None  # no stream, no delta
    assert item["duration_ms"] >= 0 and item["started_at"] <= time.time()
    assert item["account_id"] is None and item["account_name"] == ""  # blanked (R-REC-6)
    status, page = await api(harness, "/api/requests", harness.service.admin_token)
    assert status == 200
    assert page["items"][0]["account_id"] == account_id
    assert page["items"][0]["account_name"] == "work"


async def test_count_tokens_is_recorded_as_its_own_operation(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    await client(harness, key).messages.count_tokens(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}]
    )
    await harness.service.flush_records()
    [item] = (await api(harness, "/api/me/requests", key))[1]["items"]
    assert item["operation"] == "count_tokens" and item["outcome"] == "success"
    assert item["first_token_ms"] is None


async def test_streaming_first_token_after_the_upstream_delay(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    harness.upstream.script(None, Reply(kind="sse", delay_first=0.3))
    async with client(harness, key).messages.stream(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        await stream.get_final_message()
    await harness.service.flush_records()
    [item] = (await api(harness, "/api/me/requests", key))[1]["items"]
    assert item["outcome"] == "success"
    assert item["first_token_ms"] >= 300  # the scripted upstream delay before the first delta
    assert item["duration_ms"] >= item["first_token_ms"]
    assert (item["input_tokens"], item["output_tokens"], item["cached_tokens"]) == (50, 7, 30)


async def test_midstream_error_is_an_error_with_status_200(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    harness.upstream.script(None, Reply(kind="midstream_error"))
    with pytest.raises(anthropic.APIError):
        async with client(harness, key).messages.stream(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            async for _ in stream:
                pass
    await harness.service.flush_records()
    [item] = (await api(harness, "/api/me/requests", key))[1]["items"]
    assert item["outcome"] == "error" and item["upstream_status"] == 200
    assert item["error_code"] == "overloaded_error"
    assert item["first_token_ms"] is not None  # one delta came before the error


async def test_upstream_error_status_is_recorded(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    harness.upstream.script(None, Reply(status=400, error_type="invalid_request_error"))
    with pytest.raises(anthropic.BadRequestError):
        await ask(harness, key)
    await harness.service.flush_records()
    [item] = (await api(harness, "/api/me/requests", key))[1]["items"]
    assert (item["outcome"], item["upstream_status"], item["error_code"]) == (
        "error",
        400,
        "invalid_request_error",
    )


async def test_pool_rejection_leaves_a_rejected_record(harness):
    account_id = await harness.add_account("work", limit=1)
    key, _, _ = await member_key(harness, "alice")
    gate = asyncio.Event()
    harness.upstream.script(None, Reply(kind="sse", gate=gate))
    session = {"x-claude-code-session-id": SESSION}
    sdk = client(harness, key, default_headers=session)

    async def first() -> None:
        async with sdk.messages.stream(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "one"}]
        ) as s:
            await s.get_final_message()

    running = asyncio.ensure_future(first())
    await asyncio.wait_for(harness.upstream.started.wait(), 5)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await sdk.messages.create(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "two"}]
        )
    rejected_id = caught.value.response.headers["x-request-id"]
    gate.set()
    await asyncio.wait_for(running, 5)
    await harness.service.flush_records()
    items = (await api(harness, "/api/requests", harness.service.admin_token))[1]["items"]
    by_id = {i["request_id"]: i for i in items}
    rejected = by_id[rejected_id]
    assert rejected["outcome"] == "rejected" and rejected["error_code"] == "account_busy"
    assert rejected["upstream_status"] is None and rejected["input_tokens"] is None
    assert rejected["account_id"] == account_id  # the bound account that was busy
    assert [i["outcome"] for i in items] == ["success", "rejected"]  # newest first
    _status, page = await api(harness, "/api/me/requests", key, {"outcome": "rejected"})
    assert [i["request_id"] for i in page["items"]] == [rejected_id]


async def test_client_disconnect_mid_stream_is_canceled(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    gate = asyncio.Event()
    harness.upstream.script(None, Reply(kind="sse", gate=gate))
    waiter = RecordWaiter(harness.service)
    async with aiohttp.ClientSession() as s:
        resp = await s.post(
            harness.url + "/v1/messages",
            json={
                "model": "claude-sonnet-4-5",
                "max_tokens": 16,
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
        )
        await resp.content.readline()  # the stream has started
        resp.close()  # the client goes away mid-stream
    await waiter.until(1, timeout=5)
    gate.set()
    [item] = (await api(harness, "/api/me/requests", key))[1]["items"]
    assert item["outcome"] == "canceled" and item["error_code"] == "client_disconnected"
    assert item["upstream_status"] == 200


async def test_no_record_for_auth_failures(harness):
    await harness.add_account("work")
    with pytest.raises(anthropic.AuthenticationError):
        await ask(harness, "sl-not-a-key")
    await harness.service.flush_records()
    assert (await api(harness, "/api/requests", harness.service.admin_token))[1]["items"] == []


async def test_database_holds_no_prompt_key_token_or_session(harness):
    await harness.add_account("work", TOKEN)
    key, _, _ = await member_key(harness, "alice")
    sdk = client(harness, key, default_headers={"x-claude-code-session-id": SESSION})
    await sdk.messages.create(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": PROMPT}]
    )
    async with sdk.messages.stream(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        await stream.get_final_message()
    harness.upstream.script(None, Reply(status=529, error_type="overloaded_error"))
    with pytest.raises(anthropic.APIStatusError):
        await ask(harness, key, PROMPT, extra_headers={"session_id": SESSION + "-b"})
    await harness.service.flush_records()
    assert len((await api(harness, "/api/requests", harness.service.admin_token))[1]["items"]) == 3
    data_dir = harness.service.data_dir
    blob = b"".join(p.read_bytes() for p in data_dir.glob("sublane.db*"))
    assert b"request_records" in blob  # we did read the database
    for secret in (PROMPT, key, TOKEN, SESSION, "Hello from the fake upstream", "scripted"):
        assert secret.encode() not in blob, secret


# --- scope: a member sees only their own history ----------------------------------------------


async def test_members_never_see_each_other(harness):
    await harness.add_account("work", limit=8)
    alice, alice_key_id, alice_id = await member_key(harness, "alice")
    bob, bob_key_id, bob_id = await member_key(harness, "bob")
    bob_requests = []
    for _n in range(65):  # interleaved, so every page boundary falls between foreign ids
        await ask(harness, alice)
        bob_requests.append(await ask(harness, bob))
    await harness.service.flush_records()
    admin = harness.service.admin_token

    everyone = await walk(harness, "/api/requests", admin)
    assert len(everyone) == 130
    assert [i["id"] for i in everyone] == sorted((i["id"] for i in everyone), reverse=True)
    alice_ids = {i["id"] for i in everyone if i["user_id"] == alice_id}
    bob_ids = sorted(i["id"] for i in everyone if i["user_id"] == bob_id)
    assert len(alice_ids) == 65 and len(bob_ids) == 65

    widening = [
        [],
        [("user_id", str(bob_id))],
        [("scope", "all")],
        [("all", "1")],
        [("all", "true")],
        [("account_id", "1")],
        [("user_id", str(bob_id)), ("scope", "admin")],
        [("user_id", "")],
        [("user_id", "not-a-number")],
        [("user_id", "0")],
    ]
    for params in widening:
        items = await walk(harness, "/api/me/requests", alice, params)
        assert {i["id"] for i in items} == alice_ids, params
        assert {i["user_id"] for i in items} == {alice_id}
        assert {i["account_id"] for i in items} == {None}
        assert {i["account_name"] for i in items} == {""}

    # Cursors pointing into Bob's ids, at and around page edges, still page only Alice's rows.
    for cursor in (
        bob_ids[0],
        bob_ids[1],
        bob_ids[49],
        bob_ids[50],
        bob_ids[-1],
        bob_ids[-1] + 1,
        10**9,
    ):
        status, page = await api(
            harness, "/api/me/requests", alice, {"cursor": str(cursor), "user_id": str(bob_id)}
        )
        assert status == 200
        assert {i["id"] for i in page["items"]} <= alice_ids
        assert all(i["id"] < cursor for i in page["items"])
        expected = sorted((i for i in alice_ids if i < cursor), reverse=True)
        assert [i["id"] for i in page["items"]] == expected[:50]
        assert page["next_cursor"] == (expected[49] if len(expected) > 50 else None)

    # Bob's key id and request ids find nothing for Alice.
    assert await walk(harness, "/api/me/requests", alice, [("key_id", str(bob_key_id))]) == []
    for request_id in bob_requests[:3]:
        assert await walk(harness, "/api/me/requests", alice, [("request_id", request_id)]) == []
    # Bob can find his own.
    [found] = await walk(harness, "/api/me/requests", bob, [("request_id", bob_requests[0])])
    assert found["user_id"] == bob_id

    # Filter choices stay inside the caller's scope.
    status, choices = await api(harness, "/api/me/requests/filters", alice)
    assert status == 200
    assert [k["id"] for k in choices["keys"]] == [alice_key_id]
    assert "users" not in choices and "accounts" not in choices

    # Members cannot use the administrator routes.
    for path in ("/api/requests", "/api/requests/filters"):
        status, body = await api(harness, path, alice, {"user_id": str(alice_id)})
        assert status == 401 and body["error"]["type"] == "authentication_error"

    # The administrator can narrow by member.
    bobs = await walk(harness, "/api/requests", admin, [("user_id", str(bob_id))])
    assert sorted(i["id"] for i in bobs) == bob_ids
    status, choices = await api(harness, "/api/requests/filters", admin)
    assert {u["name"] for u in choices["users"]} == {"alice", "bob"}
    assert [a["name"] for a in choices["accounts"]] == ["work"]


async def test_admin_token_on_the_personal_route_is_the_administrator(harness):
    await harness.add_account("work")
    admin_key = await harness.create_key("admin-laptop")  # belongs to the administrator
    alice, _, _ = await member_key(harness, "alice")
    mine = await ask(harness, admin_key)
    await ask(harness, alice)
    await harness.service.flush_records()
    items = await walk(harness, "/api/me/requests", harness.service.admin_token)
    assert [i["request_id"] for i in items] == [mine]
    assert items[0]["account_name"] == ""  # still the personal shape
    items = await walk(harness, "/api/me/requests", admin_key)
    assert [i["request_id"] for i in items] == [mine]


async def test_personal_routes_require_a_valid_key(harness):
    alice, _, _ = await member_key(harness, "alice")
    await harness.service.store.write(lambda: repo.revoke_key("laptop"))
    for token in (None, "sl-unknown", alice, "sla-not-the-admin-token"):
        for path in ("/api/me/requests", "/api/me/requests/filters"):
            status, body = await api(harness, path, token)
            assert status == 401, (path, token)
            assert body["error"]["type"] == "authentication_error"


async def test_revoked_key_history_stays_filterable(harness):
    await harness.add_account("work")
    old, old_id, _ = await member_key(harness, "alice", "old")
    new, new_id, _ = await member_key(harness, "alice", "new")
    first = await ask(harness, old)
    await harness.service.store.write(lambda: repo.revoke_key(str(old_id)))
    await ask(harness, new)
    await harness.service.flush_records()
    items = await walk(harness, "/api/me/requests", new, [("key_id", str(old_id))])
    assert [i["request_id"] for i in items] == [first]
    _status, choices = await api(harness, "/api/me/requests/filters", new)
    assert choices["keys"] == [
        {"id": old_id, "name": "old", "prefix": old[:10], "revoked": True},
        {"id": new_id, "name": "new", "prefix": new[:10], "revoked": False},
    ]
    assert choices["outcomes"] == ["success"] and choices["models"] == ["claude-sonnet-4-5"]
    assert old not in str(choices) and new not in str(choices)


async def test_deleted_account_renders_deleted(harness):
    account_id = await harness.add_account("gone")
    key, _, _ = await member_key(harness, "alice")
    await ask(harness, key)
    await harness.service.flush_records()
    await harness.service.store.write(
        lambda: Account.update(deleted_at=1.0).where(Account.id == account_id).execute()
    )
    admin = harness.service.admin_token
    [item] = await walk(harness, "/api/requests", admin)
    assert item["account_id"] == account_id and item["account_name"] == "deleted"
    [item] = await walk(harness, "/api/requests", admin, [("account_id", str(account_id))])
    _status, choices = await api(harness, "/api/requests/filters", admin)
    assert choices["accounts"] == [{"id": account_id, "name": "deleted", "deleted": True}]


async def test_filters_narrow_the_history(harness):
    await harness.add_account("work")
    key, _, _ = await member_key(harness, "alice")
    await ask(harness, key)
    await client(harness, key).messages.create(
        model="claude-haiku-4-5", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    harness.upstream.script(None, Reply(status=500))
    with pytest.raises(anthropic.InternalServerError):
        await ask(harness, key)
    await harness.service.flush_records()
    everything = await walk(harness, "/api/me/requests", key)
    assert len(everything) == 3
    haiku = await walk(harness, "/api/me/requests", key, [("model", "claude-haiku-4-5")])
    assert [i["model"] for i in haiku] == ["claude-haiku-4-5"]
    errors = await walk(harness, "/api/me/requests", key, [("outcome", "error")])
    assert [i["upstream_status"] for i in errors] == [500]
    started = everything[-1]["started_at"]
    assert (
        len(await walk(harness, "/api/me/requests", key, [("from", str(int(started) + 3600))])) == 0
    )
    assert len(await walk(harness, "/api/me/requests", key, [("until", str(int(started)))])) == 0
    assert (
        len(
            await walk(
                harness,
                "/api/me/requests",
                key,
                [("from", str(int(started))), ("until", str(int(started) + 3600))],
            )
        )
        == 3
    )
    # Empty values mean "no filter" (`?cursor=0&outcome=` is what clients send).
    assert (
        len(
            await walk(
                harness, "/api/me/requests", key, [("cursor", "0"), ("outcome", ""), ("model", "")]
            )
        )
        == 3
    )
    _status, choices = await api(harness, "/api/me/requests/filters", key)
    assert choices["outcomes"] == ["success", "error"]
    assert choices["models"] == ["claude-haiku-4-5", "claude-sonnet-4-5"]


# --- bad input --------------------------------------------------------------------------------


BAD = [
    ({"cursor": "abc"}, "cursor"),
    ({"cursor": "-1"}, "cursor"),
    ({"cursor": "1.5"}, "cursor"),
    ({"cursor": "9" * 30}, "cursor"),
    ({"cursor": str(2**63)}, "cursor"),
    ({"outcome": "succeeded"}, "outcome"),
    ({"outcome": "SUCCESS"}, "outcome"),
    ({"key_id": "x"}, "key_id"),
    ({"key_id": "0"}, "key_id"),
    ({"from": "yesterday"}, "from"),
    ({"from": "nan"}, "from"),
    ({"until": "inf"}, "until"),
    ({"until": "1e309"}, "until"),
    ({"from": "200", "until": "100"}, "from"),
    ({"request_id": "r" * 200}, "request_id"),
]


@pytest.mark.parametrize(("params", "param"), BAD)
async def test_bad_parameters_are_400(harness, params, param):
    key, _, _ = await member_key(harness, "alice")
    for path, token in (("/api/me/requests", key), ("/api/requests", harness.service.admin_token)):
        status, body = await api(harness, path, token, params)
        assert status == 400, (path, params)
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["code"] == "invalid_request"
        assert body["error"]["param"] == param and body["error"]["message"]


@pytest.mark.parametrize("params", [{"user_id": "x"}, {"account_id": "-3"}, {"user_id": "9" * 40}])
async def test_bad_admin_only_parameters(harness, params):
    key, _, _ = await member_key(harness, "alice")
    status, _ = await api(harness, "/api/requests", harness.service.admin_token, params)
    assert status == 400
    status, _ = await api(harness, "/api/me/requests", key, params)
    assert status == 200  # the personal view does not read them at all


async def test_repeated_parameters_are_400(harness):
    key, _, _ = await member_key(harness, "alice")
    status, body = await api(
        harness, "/api/me/requests", key, [("outcome", "success"), ("outcome", "error")]
    )
    assert status == 400 and body["error"]["param"] == "outcome"


def test_parse_query_scope():
    pairs = [("user_id", "7"), ("account_id", "3"), ("scope", "all"), ("cursor", "0")]
    assert parse_query(pairs, admin=False).user_id is None
    assert parse_query(pairs, admin=False).account_id is None
    admin = parse_query(pairs, admin=True)
    assert (admin.user_id, admin.account_id, admin.cursor) == (7, 3, None)
    assert parse_query({"from": "10", "until": "10"}, admin=False).since == 10.0
    with pytest.raises(InvalidQuery):
        parse_query({"from": "11", "until": "10"}, admin=False)
    assert len(parse_query({"model": "m" * 300}, admin=False).model) == 128


# --- retention with a fake clock --------------------------------------------------------------


@pytest.fixture
async def clocked(tmp_path: Path, upstream, secret_store, clock: FakeClock):
    service = Service(
        tmp_path / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url},
    )
    await service.start()
    yield Harness(service, upstream)
    await service.stop(drain_timeout=2)


async def test_history_expires_after_seven_days(clocked, clock):
    await clocked.add_account("work")
    key, _, _ = await member_key(clocked, "alice")
    old = await ask(clocked, key)
    clock.advance(MAX_AGE_SECONDS - 10)
    recent = await ask(clocked, key)
    await clocked.service.flush_records()
    assert [i["request_id"] for i in await walk(clocked, "/api/me/requests", key)] == [recent, old]
    clock.advance(11)
    items = await walk(clocked, "/api/me/requests", key)
    assert [i["request_id"] for i in items] == [recent]
    _status, choices = await api(clocked, "/api/me/requests/filters", key)
    assert choices["outcomes"] == ["success"]
    clock.advance(MAX_AGE_SECONDS)
    assert await walk(clocked, "/api/requests", clocked.service.admin_token) == []
    newest = await ask(clocked, key)
    await clocked.service.flush_records()
    [item] = await walk(clocked, "/api/me/requests", key)
    assert item["request_id"] == newest and item["id"] == 3  # ids are never reused


async def test_global_cap_rejection_leaves_no_record(harness):
    """R-REC-1: a request turned away by the instance-wide cap is not a model attempt."""
    await harness.add_account("work", limit=4)
    key, _, _ = await member_key(harness, "alice")
    await harness.service.update_settings({"pool.cap": 1})
    gate = asyncio.Event()
    harness.upstream.script(None, Reply(kind="sse", gate=gate))
    sdk = client(harness, key)

    async def first() -> None:
        async with sdk.messages.stream(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "one"}]
        ) as s:
            await s.get_final_message()

    running = asyncio.ensure_future(first())
    await asyncio.wait_for(harness.upstream.started.wait(), 5)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await sdk.messages.create(
            model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "two"}]
        )
    assert caught.value.body["error"]["code"] == "capacity_exhausted"
    gate.set()
    await asyncio.wait_for(running, 5)
    await harness.service.flush_records()
    items = (await api(harness, "/api/requests", harness.service.admin_token))[1]["items"]
    assert [i["outcome"] for i in items] == ["success"]
