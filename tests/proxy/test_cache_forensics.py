"""Cache-miss forensics end to end (R-CF-1, R-CF-2): the real SDKs -> SubLane -> fake upstreams
whose usage is scripted per turn; the records say why a turn missed and what it cost."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import anthropic
import pytest

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.service import Service
from tests.conftest import Harness
from tests.fake_codex import CodexReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.openai_helpers import oai

SESSION = {"x-claude-code-session-id": "sess-forensics"}


def turn(total: int, cached: int, written: int = 0) -> Reply:
    """An Anthropic turn: `total` input tokens, `cached` read from the cache, `written` to it."""
    return Reply(
        kind="sse",
        usage={
            "input_tokens": total - cached - written,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
            "output_tokens": 20,
        },
    )


def body(*, one_hour: bool = False) -> dict:
    control = {"type": "ephemeral", **({"ttl": "1h"} if one_hour else {})}
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "system": [{"type": "text", "text": "be brief", "cache_control": control}],
        "messages": [{"role": "user", "content": "x"}],
    }


@pytest.fixture
def desk(clocked_codex_harness):
    return clocked_codex_harness


async def say(h, key: str, *, one_hour: bool = False, **headers: str) -> None:
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **SESSION, **headers},
    )
    async with client.messages.stream(**body(one_hour=one_hour)) as stream:
        await stream.get_final_message()
    await client.close()


def last(h):
    return h.service.records[-1]


async def api(h, path: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token or h.service.admin_token}"}
    async with aiohttp.ClientSession() as s, s.get(h.url + path, headers=headers) as r:
        return r.status, await r.json(content_type=None)


async def test_a_pause_moves_the_third_turn_and_its_record_says_account_switch(desk):
    h = desk
    work = await h.add_account("work-max", "tok-work")
    await h.add_account("lab-pro", "tok-lab")
    key = await h.create_key()
    h.upstream.script(
        None,
        turn(40_000, 0, written=40_000),
        turn(40_500, 40_000, written=500),
        turn(41_000, 0, written=41_000),
    )

    await say(h, key)
    first = last(h)
    assert (first.cache_miss, first.reread_tokens) == ("first_turn", 0)
    served = first.account_id
    h.clock.advance(40)
    await say(h, key)
    second = last(h)
    assert second.account_id == served
    assert (second.cache_miss, second.reread_tokens) == (None, 0)  # a hit

    await h.service.pause(served)
    h.clock.advance(40)
    await say(h, key)
    third = last(h)
    assert third.account_id != served
    assert third.cache_miss == "account_switch"
    # The second turn left 40,500 tokens warm on the paused account; the third read none.
    assert third.reread_tokens == 40_500
    assert (third.previous_account_id, third.idle_seconds) == (served, 40.0)
    assert second.previous_account_id is None  # a hit needs no explanation
    assert work in (served, third.account_id)

    await h.service.flush_records()
    status, page = await api(h, "/api/requests?cache_miss=account_switch")
    assert status == 200
    [item] = page["items"]
    assert item["request_id"] == third.request_id
    assert (item["cache_miss"], item["reread_tokens"]) == ("account_switch", 40_500)
    names = {work: "work-max"}
    assert item["previous_account_name"] == names.get(served, "lab-pro")
    assert item["account_name"] != item["previous_account_name"]
    assert item["idle_seconds"] == 40.0
    status, page = await api(h, "/api/requests")
    assert [i["cache_miss"] for i in page["items"]] == ["account_switch", None, "first_turn"]


async def test_past_the_ttl_the_same_account_reads_ttl_expired(desk):
    h = desk
    await h.add_account("work-max", "tok-work")
    key = await h.create_key()
    h.upstream.script(
        None,
        turn(30_000, 0, written=30_000),
        turn(30_500, 0, written=30_500),
        turn(31_000, 0, written=31_000),
        turn(31_500, 0, written=31_500),
    )
    await say(h, key)
    h.clock.advance(301)  # five minutes and a second
    await say(h, key)
    assert (last(h).cache_miss, last(h).reread_tokens) == ("ttl_expired", 30_000)

    # A request that asked for the 1-hour cache: ten minutes later, a miss is not an expiry.
    await say(h, key, one_hour=True)
    h.clock.advance(600)
    await say(h, key, one_hour=True)
    assert last(h).cache_miss == "prefix_changed"


async def test_a_changed_prefix_within_the_ttl_reads_prefix_changed(desk):
    h = desk
    await h.add_account("work-max", "tok-work")
    key = await h.create_key()
    # The client rewrote its system prompt: only 5k of the 30k-token prefix still matches.
    h.upstream.script(None, turn(30_000, 0, written=30_000), turn(30_500, 5_000, written=25_500))
    await say(h, key)
    h.clock.advance(20)
    await say(h, key)
    assert (last(h).cache_miss, last(h).reread_tokens) == ("prefix_changed", 25_000)


async def test_unbound_requests_and_rejected_attempts_stay_null(desk):
    h = desk
    account = await h.add_account("work-max", "tok-work")
    key = await h.create_key()
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    await client.messages.create(**body())
    assert (last(h).cache_miss, last(h).reread_tokens) == (None, None)

    await say(h, key)  # binds the conversation
    await h.service.pause(account)
    with pytest.raises(anthropic.APIStatusError):
        await say(h, key)
    rejected = last(h)
    assert rejected.outcome == "rejected"
    assert (rejected.cache_miss, rejected.reread_tokens) == (None, None)
    await client.close()


async def test_codex_turns_are_classified_from_cached_tokens(desk):
    h = desk
    await h.add_codex_account("codex-a", "tok-a")
    key = await h.create_key()

    def usage(total: int, cached: int) -> dict:
        return {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 9,
            "total_tokens": total + 9,
        }

    h.codex.script(
        None,
        CodexReply(usage=usage(20_000, 0)),
        CodexReply(usage=usage(21_000, 19_968)),
        CodexReply(usage=usage(22_000, 1_024)),
    )
    client = oai(h, key)
    for _ in range(2):
        await client.responses.create(
            model="gpt-5.4", input="hi", extra_body={"prompt_cache_key": "thread-1"}
        )
        h.clock.advance(30)
    assert [r.cache_miss for r in h.service.records] == ["first_turn", None]
    h.clock.advance(400)  # past Codex's five minutes
    await client.responses.create(
        model="gpt-5.4", input="hi", extra_body={"prompt_cache_key": "thread-1"}
    )
    # Codex caches the whole prompt: 21,000 were warm, 1,024 were read.
    assert (last(h).cache_miss, last(h).reread_tokens) == ("ttl_expired", 19_976)


async def test_a_restart_keeps_the_last_turn_even_of_a_freed_conversation(
    tmp_path: Path, upstream, secret_store
):
    clock = FakeClock()
    env = {"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url}

    async def started() -> Harness:
        service = Service(
            tmp_path / "data", port=0, clock=clock, secret_store=secret_store, env=env
        )
        await service.start()
        return Harness(service, upstream)

    h = await started()
    await h.add_account("work-max", "tok-work")
    await h.add_account("lab-pro", "tok-lab")
    key = await h.create_key()
    upstream.script(
        None,
        turn(40_000, 0, written=40_000),
        turn(40_500, 0, written=40_500),
        turn(41_000, 40_500, written=500),
    )
    await say(h, key)
    served = last(h).account_id
    await h.service.pause(served)  # frees the binding; the facts must survive it
    await h.service.flush_records()
    await h.service.stop(drain_timeout=1)

    clock.advance(30)
    h = await started()
    assert h.service.pool.bindings == {}
    await say(h, key)
    moved = last(h)
    assert moved.account_id != served
    assert (moved.cache_miss, moved.reread_tokens) == ("account_switch", 40_000)
    await h.service.stop(drain_timeout=1)

    clock.advance(30)
    h = await started()  # the new binding and its turn survive too: the next turn is a hit
    await say(h, key)
    assert last(h).account_id == moved.account_id
    assert (last(h).cache_miss, last(h).reread_tokens) == (None, 0)
    await h.service.stop(drain_timeout=1)


async def member_key(h, user: str) -> str:
    from sublane_desktop.store import repositories as repo

    def write() -> str:
        group = repo.get_or_create_group("default")
        return repo.create_key("laptop", repo.add_user(user), group)[1]

    return await h.service.store.write(write)


async def test_the_cache_miss_filter_and_summary_respect_personal_scope(desk):
    h = desk
    first = await h.add_account("work-max", "tok-work")
    assert await h.add_account("lab-pro", "tok-lab") == first + 1 == 2
    mine, theirs = await member_key(h, "ana"), await member_key(h, "bo")
    h.upstream.script(
        None,
        turn(40_000, 0, written=40_000),
        turn(40_500, 0, written=40_500),
        turn(9_000, 0, written=9_000),
        turn(9_500, 0, written=9_500),
    )
    await say(h, mine)  # ana: first turn
    await h.service.pause(h.service.records[-1].account_id)
    await say(h, mine)  # ana: account switch, 40,000 read again
    await h.service.resume(first)
    await say(h, theirs, **{"x-claude-code-session-id": "sess-bo"})  # bo: first turn
    h.clock.advance(301)
    await say(h, theirs, **{"x-claude-code-session-id": "sess-bo"})  # bo: ttl expired
    await h.service.flush_records()

    status, page = await api(h, "/api/me/requests?cache_miss=account_switch", mine)
    assert status == 200
    assert [(i["cache_miss"], i["reread_tokens"]) for i in page["items"]] == [
        ("account_switch", 40_000)
    ]
    hidden = page["items"][0]  # personal views still hide the accounts (R-REC-6)
    assert hidden["account_id"] is None and hidden["previous_account_id"] is None
    assert hidden["account_name"] == hidden["previous_account_name"] == ""
    assert hidden["idle_seconds"] is not None
    status, page = await api(h, "/api/me/requests?cache_miss=account_switch", theirs)
    assert page["items"] == []
    status, page = await api(h, "/api/me/requests?cache_miss=any", theirs)
    assert [i["cache_miss"] for i in page["items"]] == ["ttl_expired", "first_turn"]
    status, page = await api(h, "/api/requests?cache_miss=ttl_expired")
    assert [i["reread_tokens"] for i in page["items"]] == [9_000]

    status, err = await api(h, "/api/requests?cache_miss=hit")
    assert status == 400 and err["error"]["param"] == "cache_miss"
    assert "account_switch" in err["error"]["message"]
    status, _ = await api(h, "/api/me/requests?cache_miss=switch", mine)
    assert status == 400

    status, summary = await api(h, "/api/me/requests/misses", mine)
    assert status == 200 and "accounts" not in summary
    causes = {c["cause"]: c for c in summary["causes"]}
    assert summary["input_tokens"] == 80_500
    assert causes["account_switch"] == {
        "cause": "account_switch",
        "count": 1,
        "reread_tokens": 40_000,
        "share": round(40_000 / 80_500, 4),
    }
    assert causes["ttl_expired"]["count"] == 0
    status, summary = await api(h, "/api/requests/misses")
    causes = {c["cause"]: c for c in summary["causes"]}
    assert summary["input_tokens"] == 99_000 and summary["reread_tokens"] == 49_000
    assert causes["ttl_expired"]["reread_tokens"] == 9_000
    names = {1: "work-max", 2: "lab-pro"}
    switched = next(r for r in h.service.records if r.cache_miss == "account_switch")
    assert [
        (a["account_name"], a["reread_tokens"])
        for a in summary["accounts"]
        if a["cause"] == "account_switch"
    ] == [(names[switched.account_id], 40_000)]
    status, _ = await api(h, "/api/requests/misses?from=abc")
    assert status == 400
    status, summary = await api(h, f"/api/requests/misses?from={h.clock.now() - 1}")
    assert [c["count"] for c in summary["causes"] if c["count"]] == [1]  # only bo's expiry


async def test_no_session_id_or_digest_reaches_the_record_or_the_database(desk):
    h = desk
    await h.add_account("work-max", "tok-work")
    key = await h.create_key()
    await say(h, key, **{"x-claude-code-session-id": "sess-SECRET-77aa"})
    await h.service.flush_records()
    record = last(h)
    assert "sess-SECRET" not in repr(record)
    digest = next(iter(h.service.pool.bindings))[1]
    assert digest not in repr(record.to_row())
    data = b"".join(p.read_bytes() for p in (h.service.data_dir).glob("sublane.db*"))
    assert b"sess-SECRET-77aa" not in data


async def test_sublane_requests_prints_the_cause_filters_and_sums_misses(desk, tmp_path):
    from tests.proxy.test_history_cli import sublane

    h = desk
    await h.add_account("work-max", "tok-work")
    await h.add_account("lab-pro", "tok-lab")
    key = await h.create_key()
    h.upstream.script(None, turn(40_000, 0, written=40_000), turn(40_500, 0, written=40_500))
    await say(h, key)
    await h.service.pause(last(h).account_id)
    h.clock.advance(40)
    await say(h, key)
    switched = last(h)
    await h.service.flush_records()
    data = h.service.data_dir

    code, out, err = await sublane(tmp_path, data)
    assert code == 0, err
    assert "CACHE MISS" in out.splitlines()[0]
    row = next(line for line in out.splitlines() if switched.request_id in line)
    assert "account_switch" in row.split() and "40000" in row.split()
    code, out, err = await sublane(tmp_path, data, "--cache-miss", "account_switch", "--json")
    assert code == 0, err
    assert [i["request_id"] for i in json.loads(out)["items"]] == [switched.request_id]
    code, out, err = await sublane(tmp_path, data, "--cache-miss", "hit")
    assert code == 1 and out == ""
    assert err.strip().startswith("sublane: error: --cache-miss: cache_miss must be one of")

    code, out, err = await sublane(tmp_path, data, "--misses")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["CAUSE", "COUNT", "RE-READ", "SHARE", "OF", "INPUT"]
    switch = next(line for line in lines if line.startswith("account switch"))
    # 40,000 of the 80,500 input tokens of both turns were read again: 49.7 %.
    assert switch.split()[2:] == ["1", "40,000", "49.7%"]
    code, out, err = await sublane(tmp_path, data, "--misses", "--outcome", "error")
    assert code == 1 and out == "" and "drop --outcome" in err

    code, out, err = await sublane(
        tmp_path, data, "--misses", "--json", "--from", str(h.clock.now() + 1)
    )
    assert code == 0, err
    assert json.loads(out)["reread_tokens"] == 0

    await h.service.stop(drain_timeout=2)  # offline: the same summary from the database
    code, out, err = await sublane(tmp_path, data, "--misses", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["reread_tokens"] == 40_000 and summary["input_tokens"] == 80_500


async def test_a_whole_json_answer_counts_its_cache_writes_too(desk):
    """Not streaming: the written input (cache_creation) still makes the turn's prefix warm."""
    h = desk
    await h.add_account("work-max", "tok-work")
    await h.add_account("lab-pro", "tok-lab")
    key = await h.create_key()
    first, second = turn(30_000, 0, written=30_000), turn(30_500, 0, written=30_500)
    first.kind = second.kind = "json"
    h.upstream.script(None, first, second)
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **SESSION},
    )
    await client.messages.create(**body())
    await h.service.pause(last(h).account_id)
    await client.messages.create(**body())
    assert (last(h).cache_miss, last(h).reread_tokens) == ("account_switch", 30_000)
    await client.close()


async def test_a_haiku_side_request_in_the_session_does_not_muddle_the_main_turns(desk):
    """Claude Code sends small Haiku requests in the same session as its main model's turns;
    a provider caches per model, so each model's turn is judged against its own last turn."""
    h = desk
    await h.add_account("work-max", "tok-work")
    await h.add_account("lab-pro", "tok-lab")
    key = await h.create_key()
    replies = [turn(40_000, 0, written=40_000), turn(1_800, 0), turn(41_000, 0, written=41_000)]
    for reply in replies:
        reply.kind = "json"
    h.upstream.script(None, *replies)
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **SESSION},
    )
    await client.messages.create(**body())
    await client.messages.create(**dict(body(), model="claude-haiku-4-5"))
    side = last(h)
    assert (side.model, side.cache_miss, side.reread_tokens) == (
        "claude-haiku-4-5",
        "first_turn",
        0,
    )
    await h.service.pause(side.account_id)
    await client.messages.create(**body())
    main = last(h)
    assert (main.cache_miss, main.reread_tokens) == ("account_switch", 40_000)
    await client.close()
