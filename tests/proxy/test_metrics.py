"""GET /metrics (R-OBS-1): scraped through the real server with Prometheus's own parser, while the
real anthropic and openai SDKs send traffic to the fake upstreams; who may scrape; and the
Grafana dashboard in docs/ queries only metrics a scrape has."""

from __future__ import annotations

import asyncio
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import anthropic
import openai
import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.proxy.metrics import loopback_only
from sublane_desktop.service import Service
from sublane_desktop.service.metrics import (
    ADDED_LATENCY_BUCKETS,
    FIRST_OUTPUT_BUCKETS,
    TrafficTally,
    model_family,
)
from tests.conftest import Harness, started_harness
from tests.fake_codex import LimitFamily, Window
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.offline_cli import offline_cli
from tests.openai_helpers import oai
from tests.record_factory import a_record

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-sublane.json"
P = "anthropic-ratelimit-unified-"
MESSAGE = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


class Scrape:
    """One scrape, parsed: sample values by name and labels, and the names it holds."""

    def __init__(self, text: str) -> None:
        self.samples: dict[tuple[str, frozenset], float] = {}
        self.types: dict[str, str] = {}
        for family in text_string_to_metric_families(text):
            self.types[family.name] = family.type
            for sample in family.samples:
                self.samples[sample.name, frozenset(sample.labels.items())] = sample.value

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def sum(self, name: str, **labels: str) -> float:
        """The sum over every series of `name` whose labels include `labels`."""
        want = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and want <= ls)

    @property
    def names(self) -> set[str]:
        return {name for name, _ in self.samples}


async def get(h: Harness, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as s:
        async with s.get(h.url + "/metrics", headers=headers or {}) as r:
            return r.status, r.headers.get("Content-Type", ""), await r.text()


async def scrape(h: Harness) -> Scrape:
    status, _, text = await get(h, {"Authorization": f"Bearer {h.service.admin_token}"})
    assert status == 200, text
    return Scrape(text)


async def readings_saved(h: Harness) -> None:
    """Quota readings are saved before the gauges show them (R-GAUGE-4): wait for the save."""
    flush = getattr(h.service, "_obs_flush", None)
    if flush is not None:
        await flush


def claude(h: Harness, key: str, **headers: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        timeout=30,
        default_headers={**CLAUDE_CODE_HEADERS, **headers},
    )


async def test_values_move_with_traffic_from_the_real_sdks(codex_harness):
    h = codex_harness
    work = await h.add_account("work", "tok-work")
    await h.add_codex_account("cx", "tok-cx")
    key = await h.create_key()
    client = claude(h, key)
    before = await scrape(h)
    assert before.value("sublane_account_in_flight", account="work", provider="anthropic") == 0
    assert (
        before.value("sublane_account_max_concurrency", account="work", provider="anthropic") == 2
    )
    assert (
        before.value("sublane_account_state", account="work", provider="anthropic", state="ok") == 1
    )
    # A cold window has no utilization sample: unknown is not zero.
    assert (
        before.value(
            "sublane_account_utilization_ratio", account="work", provider="anthropic", window="5h"
        )
        is None
    )
    assert before.value("sublane_records_dropped_total") == 0

    # A response carrying quota headers; then a stream held open by the upstream.
    reset = int(time.time()) + 3 * 3600
    h.upstream.script(
        "tok-work",
        Reply(headers={P + "5h-utilization": "0.42", P + "5h-reset": str(reset)}),
    )
    await client.messages.create(**MESSAGE)
    await readings_saved(h)
    gate = asyncio.Event()
    h.upstream.script("tok-work", Reply(kind="sse", gate=gate))
    h.upstream.started.clear()

    async def stream() -> None:
        async with client.messages.stream(**MESSAGE) as s:
            await s.get_final_message()

    streaming = asyncio.create_task(stream())
    await asyncio.wait_for(h.upstream.started.wait(), 10)
    during = await scrape(h)
    gate.set()
    await streaming
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    after = await scrape(h)
    await client.close()

    assert during.value("sublane_account_in_flight", account="work", provider="anthropic") == 1
    assert during.value("sublane_pool_in_flight") == 1
    assert after.value("sublane_account_in_flight", account="work", provider="anthropic") == 0
    assert after.value(
        "sublane_account_utilization_ratio", account="work", provider="anthropic", window="5h"
    ) == pytest.approx(0.42)
    assert (
        after.value(
            "sublane_account_window_resets_timestamp_seconds",
            account="work",
            provider="anthropic",
            window="5h",
        )
        == reset
    )
    sonnet = {"outcome": "success", "provider": "anthropic", "family": "sonnet"}
    assert before.sum("sublane_requests_total", **sonnet) == 0
    assert after.sum("sublane_requests_total", **sonnet) == 2
    gpt = {"outcome": "success", "provider": "codex", "family": "gpt"}
    assert after.sum("sublane_requests_total", **gpt) == 1
    # Each attempt that reached an upstream is in the added-latency histogram, each stream
    # with a first delta in the first-output one.
    assert after.sum("sublane_added_latency_seconds_count") == 3
    assert after.value("sublane_added_latency_seconds_count", provider="codex") == 1
    assert after.value("sublane_first_output_seconds_count", provider="anthropic") == 1
    assert after.value("sublane_added_latency_seconds_bucket", provider="anthropic", le="+Inf") == 2
    assert after.types["sublane_added_latency_seconds"] == "histogram"
    assert after.types["sublane_requests"] == "counter"
    assert work in h.service.pool.accounts


async def test_upstream_429s_are_told_apart_by_scope_and_the_state_follows(harness):
    h = harness
    work = await h.add_account("work", "tok-work")
    key = await h.create_key()
    client = claude(h, key)
    rejected = {P + "5h-utilization": "1.0", P + "5h-status": "rejected"}
    h.upstream.script(
        "tok-work",
        Reply(status=429, error_type="rate_limit_error"),  # names no window: pacing
        Reply(status=429, error_type="rate_limit_error", headers=rejected),  # the 5h window
    )
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**MESSAGE)
    first = await scrape(h)
    await h.service.resume(work)  # the operator lets it serve again
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**MESSAGE)
    await readings_saved(h)
    second = await scrape(h)
    # Now the pool itself refuses (the 5h window is spent): no upstream 429 to count.
    await h.service.resume(work)
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**MESSAGE)
    third = await scrape(h)
    await client.close()

    labels = {"account": "work", "provider": "anthropic"}
    assert first.value("sublane_upstream_429_total", provider="anthropic", scope="pacing") == 1
    assert first.value("sublane_upstream_429_total", provider="anthropic", scope="quota") == 0
    assert first.value("sublane_account_state", **labels, state="cooling") == 1
    assert first.value("sublane_account_state", **labels, state="ok") == 0
    assert first.value("sublane_account_cooldown_remaining_seconds", **labels, scope="account") > 0
    assert first.value("sublane_account_failure_streak", **labels) == 1
    assert second.value("sublane_upstream_429_total", provider="anthropic", scope="pacing") == 1
    assert second.value("sublane_upstream_429_total", provider="anthropic", scope="quota") == 1
    assert second.sum("sublane_requests_total", outcome="error", provider="anthropic") == 2
    assert third.value("sublane_upstream_429_total", provider="anthropic", scope="quota") == 1
    assert third.value("sublane_account_state", **labels, state="quota_exhausted") == 1
    assert third.sum("sublane_requests_total", outcome="rejected", provider="anthropic") == 1


async def test_codex_windows_limits_and_a_spent_limit_s_429_through_the_openai_sdk(codex_harness):
    """Codex's 5h/7d windows and a per-model limit are windows of their own; a 429 that names
    a spent limit counts as quota and rests that limit only (cooldown scope = the limit)."""
    h = codex_harness
    h.codex.usage_for["*"] = 429  # the header feed only
    await h.add_codex_account("cx", "tok-cx")
    key = await h.create_key()
    spark = "gpt-5.3-codex-spark"
    h.codex.families["codex_bengalfox"] = LimitFamily(
        "GPT-5.3-Codex-Spark", (spark,), Window(100, 300, int(time.time()) + 600)
    )
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    with pytest.raises(openai.RateLimitError):
        await oai(h, key).responses.create(model=spark, input="hi")
    await readings_saved(h)
    s = await scrape(h)
    labels = {"account": "cx", "provider": "codex"}
    ratio = "sublane_account_utilization_ratio"
    assert s.value(ratio, **labels, window="5h") == pytest.approx(0.25)
    assert s.value(ratio, **labels, window="7d") == pytest.approx(0.40)
    assert s.value(ratio, **labels, window="limit:codex_bengalfox") == 1.0
    assert s.value("sublane_upstream_429_total", provider="codex", scope="quota") == 1
    assert s.value("sublane_upstream_429_total", provider="codex", scope="pacing") == 0
    rest = s.value(
        "sublane_account_cooldown_remaining_seconds", **labels, scope="limit:codex_bengalfox"
    )
    assert 0 < rest <= 600
    assert s.value("sublane_account_cooldown_remaining_seconds", **labels, scope="account") == 0
    assert s.value("sublane_account_state", **labels, state="ok") == 1  # the account serves on
    assert s.value("sublane_requests_total", outcome="error", provider="codex", family="codex") == 1
    assert s.value("sublane_requests_total", outcome="success", provider="codex", family="gpt") == 1


async def test_an_antigravity_family_spent_counts_as_quota_and_rests_that_family(
    antigravity_harness,
):
    h = antigravity_harness
    await h.add_antigravity_account("google")
    key = await h.create_key()
    resets = time.time() + 3600
    stamp = datetime.fromtimestamp(resets, UTC).isoformat().replace("+00:00", "Z")
    h.google.exhausted["claude-sonnet-4-6"] = ("1h0m0s", stamp)
    client = anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0)
    h.clients.append(client)
    ask = {"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    await client.messages.create(model="gemini-3-flash", **ask)
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(model="claude-sonnet-4-6", **ask)
    s = await scrape(h)
    labels = {"account": "google", "provider": "antigravity"}
    assert s.value("sublane_upstream_429_total", provider="antigravity", scope="quota") == 1
    assert s.value("sublane_upstream_429_total", provider="antigravity", scope="pacing") == 0
    assert s.value("sublane_account_utilization_ratio", **labels, window="claude") == 1.0
    rest = s.value("sublane_account_cooldown_remaining_seconds", **labels, scope="claude")
    assert 3500 < rest <= 3600
    assert s.value("sublane_account_state", **labels, state="ok") == 1
    gemini = {"provider": "antigravity", "family": "gemini_flash"}
    assert s.value("sublane_requests_total", outcome="success", **gemini) == 1
    claude = {"provider": "antigravity", "family": "claude"}
    assert s.value("sublane_requests_total", outcome="error", **claude) == 1


async def test_cache_misses_and_reread_tokens_are_counted_by_cause(harness):
    h = harness
    await h.add_account("work", "tok-work")
    key = await h.create_key()
    client = claude(h, key, **{"x-claude-code-session-id": "sess-metrics"})
    usage = {"input_tokens": 2, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 8}
    cold = {"input_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    h.upstream.script(
        "tok-work",
        Reply(usage={**usage, "output_tokens": 5}),
        Reply(usage={**cold, "output_tokens": 5}),  # same account, in the TTL: prefix changed
    )
    await client.messages.create(**MESSAGE)
    await client.messages.create(**MESSAGE)
    await client.close()
    s = await scrape(h)
    assert s.value("sublane_cache_misses_total", provider="anthropic", cause="first_turn") == 1
    assert s.value("sublane_cache_misses_total", provider="anthropic", cause="prefix_changed") == 1
    # The previous turn left 38 tokens warm (30 read + 8 written); this one read none of them.
    assert (
        s.value("sublane_cache_reread_tokens_total", provider="anthropic", cause="prefix_changed")
        == 38
    )


async def test_an_account_the_cli_adds_while_the_server_runs_is_in_the_next_scrape(harness):
    h = harness
    assert (await scrape(h)).value(
        "sublane_account_in_flight", account="late", provider="codex"
    ) is None
    with offline_cli(h.service) as offline:  # what `sublane account …` opens
        secret = {"api_key": "sk-proj-late"}
        await asyncio.to_thread(offline.add_account, "codex", "late", "default", None, 3, secret)
    s = await scrape(h)
    assert s.value("sublane_account_max_concurrency", account="late", provider="codex") == 3


async def test_a_server_starts_from_zero_whatever_ran_before_it_in_the_process(
    tmp_path, upstream, secret_store
):
    """Each server has a registry of its own: nothing global carries numbers over."""
    for run in ("first", "second"):
        async with started_harness(tmp_path / run, secret_store, upstream) as h:
            await h.add_account("work", f"tok-{run}")
            client = claude(h, await h.create_key())
            assert (await scrape(h)).sum("sublane_requests_total") == 0
            await client.messages.create(**MESSAGE)
            await client.close()
            assert (await scrape(h)).sum("sublane_requests_total") == 1


async def test_a_scraper_that_asks_for_openmetrics_gets_it(harness):
    h = harness
    await h.add_account("work", "tok-work")
    headers = {
        "Authorization": f"Bearer {h.service.admin_token}",
        "Accept": "application/openmetrics-text; version=1.0.0",
    }
    status, ctype, text = await get(h, headers)
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in openmetrics_families(text)}
    assert families["sublane_requests"].type == "counter"
    state = families["sublane_account_state"]
    assert {s.labels["state"] for s in state.samples} >= {"ok", "cooling", "quota_exhausted"}


async def test_only_the_administrator_token_may_scrape(harness):
    h = harness
    await h.add_account("work", "tok-work")
    member = await h.create_key("laptop", user="sam")
    status, _, text = await get(h, {"Authorization": f"Bearer {member}"})
    assert status == 403
    error = json.loads(text)["error"]
    assert error["code"] == "forbidden" and "administrator token" in error["message"]
    assert error["type"] == "permission_error"
    status, _, text = await get(h, {"x-api-key": member})
    assert status == 403
    for wrong in ({"Authorization": "Bearer sl-not-a-key"}, {"Authorization": "Basic abc"}):
        status, _, text = await get(h, wrong)
        assert status == 401, wrong
        assert json.loads(text)["error"]["code"] == "unauthorized"
        assert "sl-not-a-key" not in text
    status, ctype, text = await get(h, {"Authorization": f"Bearer {h.service.admin_token}"})
    assert status == 200 and ctype.startswith("text/plain")
    assert "sublane_account_state" in text


async def test_no_token_on_a_loopback_server_only_while_the_setting_allows_it(harness):
    h = harness
    assert h.service.host == "127.0.0.1"
    status, _, text = await get(h)
    assert status == 200
    assert "sublane_pool_cap" in text
    async with aiohttp.ClientSession() as s:
        auth = {"Authorization": f"Bearer {h.service.admin_token}"}
        async with s.patch(
            h.url + "/api/settings",
            json={"metrics.allow_loopback_without_token": "no"},
            headers=auth,
        ) as r:
            assert r.status == 400  # bad input: one clear line, nothing changed
            assert "true or false" in (await r.json())["error"]["message"]
        assert h.service.settings["metrics.allow_loopback_without_token"] is True
        async with s.patch(
            h.url + "/api/settings",
            json={"metrics.allow_loopback_without_token": False},
            headers=auth,
        ) as r:
            assert r.status == 200
    status, _, text = await get(h)
    assert status == 401
    assert json.loads(text)["error"]["code"] == "unauthorized"
    status, _, _ = await get(h, {"Authorization": f"Bearer {h.service.admin_token}"})
    assert status == 200


async def test_a_server_reachable_from_other_machines_always_asks_for_the_token(
    tmp_path, upstream, secret_store
):
    service = Service(
        tmp_path / "data",
        host="0.0.0.0",
        port=0,
        secret_store=secret_store,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url},
    )
    await service.start()
    try:
        assert service.settings["metrics.allow_loopback_without_token"] is True
        url = f"http://127.0.0.1:{service.port}/metrics"
        async with aiohttp.ClientSession() as s:
            async with s.get(url) as r:
                assert r.status == 401
            auth = {"Authorization": f"Bearer {service.admin_token}"}
            async with s.get(url, headers=auth) as r:
                assert r.status == 200
    finally:
        await service.stop(drain_timeout=1)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("sublane.example.com", False),
        ("LOCALHOST", True),
        ("dev.localhost", True),
        ("Xlocalhost", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_only_means_no_other_machine_can_connect(host, local):
    assert loopback_only(host) is local


def dashboard_metric_names() -> set[str]:
    """Every metric name the dashboard's panels and variables query."""
    text = DASHBOARD.read_text()
    board = json.loads(text)  # valid JSON, or Grafana cannot import it
    assert len([t["expr"] for p in board["panels"] for t in p["targets"]]) >= 8
    return set(re.findall(r"\bsublane_[a-z0-9_]+", text))


async def test_every_metric_the_grafana_dashboard_queries_is_in_a_scrape(harness):
    h = harness
    await h.add_account("work", "tok-work")
    key = await h.create_key()
    client = claude(h, key, **{"x-claude-code-session-id": "sess-board"})
    h.upstream.script(
        "tok-work",
        Reply(kind="sse", headers={P + "5h-utilization": "0.2"}),
        Reply(status=429, error_type="rate_limit_error"),
    )
    async with client.messages.stream(**MESSAGE) as s:
        await s.get_final_message()
    await readings_saved(h)
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.create(**MESSAGE)
    await client.close()
    scraped = (await scrape(h)).names
    queried = dashboard_metric_names()
    assert {"sublane_account_utilization_ratio", "sublane_requests_total"} <= queried
    assert queried <= scraped, queried - scraped


@pytest.mark.parametrize(
    ("provider", "model", "family"),
    [
        ("anthropic", "claude-opus-4-6", "opus"),
        ("anthropic", "claude-sonnet-4-5", "sonnet"),
        ("anthropic", "claude-haiku-4-5", "haiku"),
        ("anthropic", "claude-fable-5", "fable"),
        ("anthropic", "claude-3-7-mythic", "claude"),
        ("codex", "gpt-5.4", "gpt"),
        ("codex", "gpt-5.3-codex-spark", "codex"),
        ("codex", "o3", "o_series"),
        ("antigravity", "gemini-3-flash", "gemini_flash"),
        ("antigravity", "gemini-3-pro-high", "gemini_pro"),
        ("antigravity", "claude-sonnet-4-6", "claude"),
        ("codex", 'evil"} 1\nsublane_pool_cap 0', "other"),
        ("anthropic", "gpt-4o", "other"),
        ("antigravity", "llama-3", "other"),
        ("bedrock", "claude-sonnet-4-5", "other"),
    ],
)
def test_a_model_s_family_is_a_bounded_name_never_the_client_s_text(provider, model, family):
    assert model_family(provider, model) == family


async def test_each_window_says_when_it_was_read_and_whether_the_reading_is_stale(
    tmp_path, upstream, secret_store
):
    """Per window: the reading's time, stale once it is older than the poll cadence allows (as
    the desktop shows it, service/views.py) or was never read; the Fable bucket's own rest to
    the fraction of a second; the pool's cap."""
    clock = FakeClock()
    async with started_harness(tmp_path, secret_store, upstream, clock=clock) as h:
        work = await h.add_account("work", "tok-work")
        key = await h.create_key()
        client = claude(h, key)
        h.upstream.script("tok-work", Reply(headers={P + "5h-utilization": "0.2"}))
        await client.messages.create(**MESSAGE)
        await client.close()
        await readings_saved(h)
        read_at = clock.now()
        h.service.pool.accounts[work].fable_cooldown_until = clock.now() + 0.5
        labels = {"account": "work", "provider": "anthropic"}
        fresh = await scrape(h)
        clock.advance(3600)  # an hour without a reading
        later = await scrape(h)

    observed = "sublane_account_window_observed_timestamp_seconds"
    assert fresh.value(observed, **labels, window="5h") == read_at
    assert fresh.value("sublane_account_window_stale", **labels, window="5h") == 0
    assert fresh.value("sublane_account_window_stale", **labels, window="7d") == 1  # never read
    assert later.value("sublane_account_window_stale", **labels, window="5h") == 1
    left = "sublane_account_cooldown_remaining_seconds"
    assert fresh.value(left, **labels, scope="fable") == 0.5
    assert later.value(left, **labels, scope="fable") == 0
    assert fresh.value("sublane_pool_cap") == h.service.pool.cap


async def test_a_codex_account_has_no_fable_bucket_to_rest(codex_harness):
    h = codex_harness
    await h.add_codex_account("cx")
    scraped = await scrape(h)
    left = "sublane_account_cooldown_remaining_seconds"
    assert scraped.value(left, account="cx", provider="codex", scope="account") == 0
    assert scraped.value(left, account="cx", provider="codex", scope="fable") is None


async def test_a_refused_scrape_says_what_to_present(harness):
    h = harness
    member = await h.create_key("laptop", user="sam")
    status, _, text = await get(h, {"Authorization": f"Bearer {member}"})
    assert (status, json.loads(text)["error"]["message"]) == (
        403,
        "a client key cannot read the metrics: use the administrator token",
    )
    status, _, text = await get(h, {"Authorization": "Bearer sl-not-a-key"})
    assert (status, json.loads(text)["error"]["message"]) == (
        401,
        "administrator token required",
    )
    h.service.settings["metrics.allow_loopback_without_token"] = False
    status, _, text = await get(h)
    assert (status, json.loads(text)["error"]["message"]) == (
        401,
        "administrator token required (`sublane admin-token` prints it)",
    )


async def test_without_a_keyring_a_presented_token_hears_why_metrics_are_unavailable(
    tmp_path, upstream, monkeypatch
):
    import keyring

    for name in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    previous = keyring.get_keyring()
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    keyring.core.init_backend()
    service = Service(tmp_path / "data", port=0, env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url})
    await service.start()
    try:
        assert service.admin_token is None and service.keyring_problem
        url = f"http://127.0.0.1:{service.port}/metrics"
        async with aiohttp.ClientSession() as s:
            async with s.get(url, headers={"Authorization": "Bearer guess"}) as r:
                error = (await r.json())["error"]
        assert error["code"] == "auth_failed"
        assert error["message"] == "metrics unavailable: " + service.keyring_problem
    finally:
        await service.stop(drain_timeout=1)
        keyring.core.set_keyring(previous)


def test_the_traffic_tallies_add_up_every_record_and_exchange():
    """What the request path counts between scrapes: each record, its first output in seconds,
    cache misses and the tokens they re-read, SubLane's own time and the upstream's 429s."""
    tally = TrafficTally()
    for _ in range(3):
        tally.count_record(a_record(outcome="success", first_token_ms=1500))
    tally.count_record(a_record(outcome="error", cache_miss="ttl_expired", reread_tokens=40_000))
    tally.count_record(a_record(outcome="success", cache_miss="ttl_expired", reread_tokens=None))
    assert tally.requests == {
        ("success", "anthropic", "sonnet"): 4,
        ("error", "anthropic", "sonnet"): 1,
    }
    first = tally.first_output.series["anthropic"]
    assert first.total == 4.5  # three answers, 1.5 s each
    bucket = FIRST_OUTPUT_BUCKETS.index(2.0)  # 1.5 s is in the "le 2" bucket
    assert first.counts[bucket] == 3 and sum(first.counts) == 3
    assert tally.cache_misses == {("anthropic", "ttl_expired"): 2}
    assert tally.reread_tokens == {("anthropic", "ttl_expired"): 40_000}

    tally.count_upstream("anthropic", 0.004, "pacing", 429)
    tally.count_upstream("anthropic", 0.004, "pacing", 429)
    tally.count_upstream("anthropic", -0.001, "quota", 200)  # a clock step back reads as 0
    assert tally.upstream_429 == {("anthropic", "pacing"): 2}
    added = tally.added_latency.series["anthropic"]
    assert added.total == 0.008 and added.counts[0] == 1  # the 0 s exchange: first bucket
    assert added.counts[ADDED_LATENCY_BUCKETS.index(0.005)] == 2
