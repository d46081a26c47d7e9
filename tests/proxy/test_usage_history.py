"""R-UI-7 and R-UI-11 end to end: readings from real responses are kept as history (thinned,
with retention), survive a restart, and feed the forecast in the runtime view."""

from __future__ import annotations

import anthropic
import pytest

from sublane_desktop.service import Service
from sublane_desktop.store.quota import HISTORY_RETENTION_S
from tests.conftest import Harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS

P = "anthropic-ratelimit-unified-"
MIN = 60.0
H = 3600.0
MAIN = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


@pytest.fixture
async def clocked(tmp_path, upstream, secret_store, clock):
    service = Service(
        tmp_path / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url},
    )
    await service.start()
    h = Harness(service, upstream)
    h.clock = clock
    h.tmp = tmp_path
    yield h
    if h.service.store is not None:
        await h.service.stop(drain_timeout=2)


def headers(h, five: float, resets_in: float):
    now = h.clock.now()
    return {
        P + "5h-utilization": str(five),
        P + "5h-reset": str(int(now + resets_in)),
        P + "7d-utilization": "0.2",
        P + "7d-reset": str(int(now + 100 * H)),
    }


async def burn(h, client, start: float, per_step: float, steps: int, resets_at: float):
    for i in range(steps):
        h.upstream.headers_for["tok-a"] = headers(
            h, start + per_step * i, resets_at - h.clock.now()
        )
        await client.messages.create(**MAIN)
        await h.service._obs_flush
        if i < steps - 1:
            h.clock.advance(10 * MIN)


async def test_a_steady_burn_forecasts_running_out_before_the_reset(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=await h.create_key(),
        max_retries=0,
        default_headers=CLAUDE_CODE_HEADERS,
    )
    h.upstream.usage_for["*"] = 429  # only the headers feed
    resets_at = h.clock.now() + 4 * H
    # 5 % every 10 minutes = 30 %/h; from 55 % at the last reading: 1 h 30 m left, reset in 3 h 20 m
    await burn(h, client, 0.30, 0.05, 6, resets_at)
    view = h.service.account_view(acc)
    assert set(view["forecast"]) == {"five_hour"}  # the 7d window is flat
    found = view["forecast"]["five_hour"]
    assert found["rate_per_hour"] == pytest.approx(0.30)
    assert found["runs_out_at"] - h.clock.now() == pytest.approx(1.5 * H, abs=1)
    assert found["resets_at"] == pytest.approx(resets_at, abs=1)

    # the same burn with the reset sooner than running out: no forecast
    history = await h.service.usage_history(acc, h.clock.now() - 7 * 86400)
    assert [u for _, u in history["five_hour"]] == pytest.approx(
        [0.30, 0.35, 0.40, 0.45, 0.50, 0.55]
    )
    assert len(history["seven_day"]) == 6


async def test_no_forecast_when_the_window_resets_first_or_the_reading_is_stale(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=await h.create_key(),
        max_retries=0,
        default_headers=CLAUDE_CODE_HEADERS,
    )
    h.upstream.usage_for["*"] = 429
    await burn(h, client, 0.30, 0.05, 4, h.clock.now() + 40 * MIN)
    assert h.service.account_view(acc)["forecast"] == {}

    await burn(h, client, 0.50, 0.05, 3, h.clock.now() + 4 * H)
    assert "five_hour" in h.service.account_view(acc)["forecast"]
    # no traffic past the poll cadence and its grace (R-UI-14): stale, the forecast goes
    h.clock.advance(6 * MIN + 1)
    assert h.service.account_view(acc)["forecast"] == {}


async def test_history_is_thinned_kept_for_its_retention_and_survives_a_restart(
    clocked, upstream, secret_store, clock
):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    client = anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=await h.create_key(),
        max_retries=0,
        default_headers=CLAUDE_CODE_HEADERS,
    )
    h.upstream.usage_for["*"] = 429
    h.upstream.headers_for["tok-a"] = headers(h, 0.10, 4 * H)
    for _ in range(3):  # the same reading within a minute: one row
        await client.messages.create(**MAIN)
        await h.service._obs_flush
        h.clock.advance(5)
    first = h.clock.now()
    history = await h.service.usage_history(acc, 0)
    assert len(history["five_hour"]) == 1
    # and the trail the forecasts read keeps the same one (it kept all three, growing with
    # traffic for an hour: a reading comes with every response)
    assert h.service.usage_trail.points(acc, "five_hour") == history["five_hour"]

    h.clock.advance(HISTORY_RETENTION_S + MIN)
    h.upstream.headers_for["tok-a"] = headers(h, 0.20, 4 * H)
    await client.messages.create(**MAIN)
    await h.service._obs_flush
    history = await h.service.usage_history(acc, 0)
    assert [u for _, u in history["five_hour"]] == [0.20]  # the old row is past retention
    assert first < history["five_hour"][0][0]

    await h.service.stop(drain_timeout=2)
    again = Service(
        h.tmp / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url},
    )
    await again.start()
    try:
        assert (await again.usage_history(acc, 0))["five_hour"] == history["five_hour"]
        assert again.usage_trail.points(acc, "five_hour") == history["five_hour"]
    finally:
        await again.stop(drain_timeout=2)
