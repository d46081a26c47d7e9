"""R-OBS-3 end to end: each upstream 429 is classified (a window named → a quota hold tied to
that window's reset; none → pacing on the ladder), a quota hold ends on evidence (the reset
passes, a usage read shows headroom, a response says `allowed`), and the account views say
which evidence holds the account and until when. Real proxy, real SQLite, strict fakes, a
fake clock."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest

from sublane_desktop.core.cooldown import cooldown_seconds
from sublane_desktop.gui import dashboard, pool_status
from sublane_desktop.service import Service
from tests.conftest import Harness, fake_env
from tests.fake_codex import CodexReply, Window, window_headers
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.openai_helpers import oai, until
from tests.proxy.test_quota_e2e import FABLE, MAIN, H, P
from tests.proxy.test_quota_e2e import clocked as clocked  # the fixture this module uses


def clock_minutes(ts: float, now: float = 1_800_000_000.0) -> str:
    """The local time a person reads: HH:MM, with the weekday when not within the day."""
    return time.strftime("%H:%M" if ts - now < 20 * 3600 else "%a %H:%M", time.localtime(ts))


def sdk(h, key):
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, timeout=30, default_headers=CLAUDE_CODE_HEADERS
    )


def spent_5h(clock, resets_in=2 * H):
    return Reply(
        status=429,
        error_type="rate_limit_error",
        headers={
            P + "status": "rejected",
            P + "5h-status": "rejected",
            P + "5h-utilization": "1.0",
            P + "5h-reset": str(int(clock.now() + resets_in)),
            P + "7d-status": "allowed",
            P + "7d-utilization": "0.4",
            P + "representative-claim": "five_hour",
        },
    )


async def test_a_claude_quota_429_holds_until_its_reset_and_says_so(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429  # no usage read: only the reset ends it here
    h.upstream.script("tok-a", spent_5h(h.clock))
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**MAIN)
    resets = int(h.clock.now() + 2 * H)
    view = h.service.account_view(acc)
    assert view["state"] == "cooling" and view["cooldown_until"] == resets  # not 15 s
    assert view["hold"] == {
        "kind": "quota",
        "scope": "account",
        "window": "five_hour",
        "until": resets,
        "resets_at": resets,
        "words": f"Limit reached (5h), resets {clock_minutes(resets)}",
        "cause": None,
    }
    # the Accounts row, the tray row and the tooltip name the evidence and until when
    words = f"Limit reached (5h), resets {clock_minutes(resets)}"
    now = h.clock.now()
    said = f"{words} · {pool_status.countdown(2 * H)}"
    assert pool_status.badges(view, now)[0][0] == said
    assert dashboard.account_row(view, h.service.settings, now).status.words == said
    assert f"a: {said}" in pool_status.tooltip_text(h.url, [view], now=now)
    # the 15-minute ladder cap passes: still held, since the window has not reset
    h.clock.advance(16 * 60)
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(**MAIN)
    assert err.value.body["error"]["code"] == "account_cooling"
    assert "5h limit" in err.value.body["error"]["message"]
    # (a) the reset passes: it serves again
    h.clock.advance(2 * H)
    await sdk(h, key).messages.create(**MAIN)
    assert h.service.account_view(acc)["hold"] is None


async def test_a_claude_429_that_names_no_window_is_pacing(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    h.upstream.script("tok-a", Reply(status=429, error_type="rate_limit_error"))
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**MAIN)
    view = h.service.account_view(acc)
    until_ts = h.clock.now() + cooldown_seconds(1)
    assert view["hold"]["kind"] == "pacing" and view["cooldown_until"] == until_ts
    assert view["hold"]["words"] == (
        f"Cooling until {clock_minutes(until_ts)} — upstream 429 (pacing)"
    )
    assert view["state"] == "cooling"  # never quota_exhausted
    row = dashboard.account_row(view, h.service.settings, h.clock.now())
    assert row.status.words.startswith("Cooling until ")
    assert row.status.detail == "the provider asked to slow down"
    tip = pool_status.tooltip_text(h.url, [view], now=h.clock.now())
    assert "the provider asked to slow down" in tip and "Limit" not in tip and "quota" not in tip


async def test_b_a_usage_read_with_headroom_ends_a_quota_hold(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    h.upstream.script("tok-a", spent_5h(h.clock))
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**MAIN)
    assert h.service.account_view(acc)["state"] == "cooling"
    h.clock.advance(5)  # inside even the ladder's first rung (15 s)
    h.upstream.usage_for["*"] = {"five_hour": {"utilization": 35.0, "resets_at": None}}
    h.service.refresh_quotas()  # a person pressed Refresh
    await until(lambda: h.service.account_view(acc)["hold"] is None, "the read ends the hold")
    assert h.service.account_view(acc)["state"] == "ok"
    await sdk(h, key).messages.create(**MAIN)


async def test_b_a_request_turned_away_reads_the_held_account_and_the_read_lifts_it(clocked):
    """With every account held, traffic reaches no upstream; the requests the pool turns
    away still start a usage read of the stale held account (R-GAUGE-3), and its headroom
    ends the hold before the window's reset."""
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = {"five_hour": {"utilization": 100.0, "resets_at": None}}
    h.upstream.script("tok-a", spent_5h(h.clock, resets_in=3 * H))
    client = sdk(h, key)
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**MAIN)
    # (the 429 itself started a read of the cold Fable gauge: the window was still spent)
    await until(lambda: len(h.upstream.usage_reads) == 1, "the read the 429 started")
    await until(lambda: not h.service.quota.refresher._running, "that read landed")
    assert h.service.account_view(acc)["state"] == "cooling"
    h.upstream.usage_for["*"] = {"five_hour": {"utilization": 20.0, "resets_at": None}}
    reads = len(h.upstream.usage_reads)
    h.clock.advance(6 * 60)  # stale readings, past the 5-minute poll floor
    with pytest.raises(anthropic.RateLimitError) as err:
        await client.messages.create(**MAIN)
    assert err.value.body["error"]["code"] == "account_cooling"
    await until(lambda: h.service.account_view(acc)["hold"] is None, "the read lifts the hold")
    assert len(h.upstream.usage_reads) == reads + 1
    await client.messages.create(**MAIN)  # hours before the 5h reset


async def test_c_a_response_saying_allowed_ends_a_fable_quota_hold(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    resets = int(h.clock.now() + 30 * H)
    h.upstream.script(
        "tok-a",
        Reply(
            status=429,
            error_type="rate_limit_error",
            headers={
                P + "7d_oi-status": "rejected",
                P + "7d_oi-utilization": "1.0",
                P + "7d_oi-reset": str(resets),
                P + "5h-status": "allowed",
                P + "7d-status": "allowed",
            },
        ),
    )
    client = sdk(h, key)
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**FABLE)
    view = h.service.account_view(acc)
    assert view["state"] == "ok"  # the account serves other models meanwhile
    assert view["hold"]["scope"] == "fable" and view["hold"]["until"] == resets
    assert view["hold"]["words"] == f"Limit reached (Fable), resets {clock_minutes(resets)}"
    tip = pool_status.tooltip_text(h.url, [view], now=h.clock.now())
    assert f"a: Limit reached (Fable), resets {clock_minutes(resets)}" in tip.splitlines()
    # the Accounts row: "ok" for what it serves, and a badge for the bucket that rests
    badges = [text for text, _ in pool_status.badges(view, h.clock.now())]
    assert badges == ["Ready", f"{view['hold']['words']} · {pool_status.countdown(30 * H)}"]
    # the tray row serves on, and its tooltip names the resting bucket
    row = dashboard.account_row(view, h.service.settings, h.clock.now())
    assert row.serving and view["hold"]["words"] in row.description.splitlines()
    h.clock.advance(20 * 60)  # past any ladder rung: still held
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**FABLE)
    # a main-model response says the Fable bucket is allowed again (headroom was bought)
    h.upstream.headers_for["tok-a"] = {
        P + "7d_oi-status": "allowed",
        P + "7d_oi-utilization": "0.5",
        P + "7d_oi-reset": str(resets),
    }
    await client.messages.create(**MAIN)
    assert h.service.account_view(acc)["hold"] is None
    await client.messages.create(**FABLE)


async def test_a_codex_spent_window_holds_until_the_reset_its_429_names(clocked_codex_harness):
    h = clocked_codex_harness
    acc = await h.add_codex_account("gpt", "tok-gpt")
    key = await h.create_key()
    h.codex.usage_for["*"] = 429
    resets = 1_800_009_000
    windows = [Window(100, 300, resets), Window(60, 10080, 1_800_300_000)]
    spent = {"error": {"type": "usage_limit_reached", "message": "x", "resets_at": resets}}
    h.codex.script(
        None,
        CodexReply(
            kind="error",
            status=429,
            error_body=spent,
            quota=False,
            headers=window_headers("codex", windows),
        ),
    )
    with pytest.raises(openai.RateLimitError):
        await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    hold = h.service.account_view(acc)["hold"]
    assert (hold["kind"], hold["window"], hold["until"]) == ("quota", "five_hour", resets)
    assert hold["words"] == f"Limit reached (5h), resets {clock_minutes(resets)}"


async def test_an_antigravity_spent_family_says_which_family_and_until_when(antigravity_harness):
    from tests.proxy.test_antigravity_fidelity import ask, iso

    h = antigravity_harness
    acc = await h.add_antigravity_account("google")
    h.key = await h.create_key()  # what the fidelity module's `ask` speaks with
    resets = h.service.clock.now() + 2 * H
    h.google.exhausted["claude-sonnet-4-6"] = ("2h0m0s", iso(resets))
    with pytest.raises(anthropic.RateLimitError):
        await ask(h, "claude-sonnet-4-6")
    (hold,) = h.service.account_view(acc)["holds"]
    assert (hold["kind"], hold["scope"], hold["window"]) == ("quota", "claude", "claude")
    assert hold["words"] == f"Limit reached (Claude), resets {clock_minutes(hold['until'])}"
    assert hold["until"] == pytest.approx(resets, abs=2)


async def test_a_quota_hold_keeps_its_window_and_reset_across_a_restart(
    tmp_path, upstream, secret_store, clock
):
    def fresh() -> Service:
        return Service(
            tmp_path / "data",
            port=0,
            secret_store=secret_store,
            clock=clock,
            env=fake_env(upstream),
        )

    service = fresh()
    await service.start()
    h = Harness(service, upstream)
    acc = await h.add_account("a", "tok-a")
    upstream.usage_for["*"] = 429
    upstream.script("tok-a", spent_5h(clock, resets_in=3 * H))
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, await h.create_key()).messages.create(**MAIN)
    before = service.account_view(acc)["hold"]
    await service.stop()

    again = fresh()
    await again.start()
    try:
        after = again.account_view(acc)["hold"]
        assert after == before and after["kind"] == "quota" and after["window"] == "five_hour"
        assert json.dumps(after)  # the HTTP view carries it as JSON
    finally:
        await again.stop()
