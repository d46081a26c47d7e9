"""`GET /metrics` (R-OBS-1): the pool and its traffic in the Prometheus exposition format.

prometheus_client (the Prometheus project's own Python client) writes the format and picks
the encoding a scraper asks for (text 0.0.4, or OpenMetrics). Each server has a registry of its
own holding one collector, so nothing is global: servers started one after another in one
process (the tests) never carry numbers over. The collector reads the live pool when a
scraper asks, and the traffic tallies the request path keeps (`service/metrics.py`); the request
path itself never touches the library.

Access: the administrator token; or no credential at all when the server listens on loopback
only and `metrics.allow_loopback_without_token` (default true) allows it. A client key is
refused with 403 (it names a member, who may not read the whole pool); any other credential is
401. Errors use the management API's OpenAI shape.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from sublane_desktop.core.cooldown import PACING, QUOTA
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import client_key
from sublane_desktop.service.metrics import Histogram

log = logging.getLogger(__name__)

LOOPBACK_SETTING = "metrics.allow_loopback_without_token"
# R-POOL states, in the order of SPEC §7: one series each, 1 for the account's state.
STATES = (
    "ok",
    "busy",
    "cooling",
    "probing",
    "quota_exhausted",
    "paused",
    "auth_failed",
    "disabled",
)
# Window labels as people say them; families and Codex limits ("limit:<id>") keep their names.
WINDOW_LABELS = {"five_hour": "5h", "seven_day": "7d"}
ACCOUNT = ["account", "provider"]
REGISTRY: web.AppKey[CollectorRegistry] = web.AppKey("metrics_registry", CollectorRegistry)


def loopback_only(host: str) -> bool:
    """Does a server bound to `host` accept connections from this machine only?"""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name, or a wildcard such as 0.0.0.0 / ::


async def check_access(request: web.Request, service: Any) -> None:
    """Raise GatewayError unless the caller may read the metrics (see the module's words)."""
    presented = request.headers.get("x-api-key") or request.headers.get("Authorization")
    if not presented:
        if loopback_only(service.host) and service.settings.get(LOOPBACK_SETTING, True):
            return
        raise GatewayError(
            "unauthorized", "administrator token required (`sublane admin-token` prints it)"
        )
    token = client_key(request)
    expected = service.admin_token
    if token and expected and hmac.compare_digest(token.encode(), expected.encode()):
        return
    if token and await service.identify(token) is not None:
        raise GatewayError(
            "forbidden", "a client key cannot read the metrics: use the administrator token"
        )
    if expected is None and service.keyring_problem:
        raise GatewayError("auth_failed", "metrics unavailable: " + service.keyring_problem)
    raise GatewayError("unauthorized", "administrator token required")


class PoolCollector(Collector):
    """Every metric, gathered when a scraper asks."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def collect(self) -> Iterable[Metric]:
        view = self.service.accounts_runtime()  # the states and gauges the API and tray show
        yield from self._accounts(view)
        yield from self._traffic(sorted({row["provider"] for row in view["accounts"]}))

    def _accounts(self, view: dict[str, Any]) -> Iterator[Metric]:
        service = self.service
        pool = service.pool
        now = service.clock.now()
        state = GaugeMetricFamily(
            "sublane_account_state",
            "1 for the account's state (ok, busy, cooling, probing, quota_exhausted, paused, "
            "auth_failed, disabled), 0 for the others",
            labels=[*ACCOUNT, "state"],
        )
        in_flight = GaugeMetricFamily(
            "sublane_account_in_flight", "Model requests running on the account", labels=ACCOUNT
        )
        limit = GaugeMetricFamily(
            "sublane_account_max_concurrency",
            "The account's limit of simultaneous model requests",
            labels=ACCOUNT,
        )
        streak = GaugeMetricFamily(
            "sublane_account_failure_streak",
            "Failures in a row (network, 5xx, 429) that set the cooldown ladder's rung",
            labels=ACCOUNT,
        )
        cooldown = GaugeMetricFamily(
            "sublane_account_cooldown_remaining_seconds",
            "Seconds until a cooldown ends: scope account (the whole account), fable (the Fable "
            "bucket only), or a model family or Codex limit resting after its quota was spent",
            labels=[*ACCOUNT, "scope"],
        )
        utilization = GaugeMetricFamily(
            "sublane_account_utilization_ratio",
            "Quota window utilization, 0..1 (may exceed 1 as the upstream reports it); a window "
            "past its reset reads 0; never-observed (cold) windows have no sample",
            labels=[*ACCOUNT, "window"],
        )
        resets = GaugeMetricFamily(
            "sublane_account_window_resets_timestamp_seconds",
            "When the quota window resets (unix seconds), where known",
            labels=[*ACCOUNT, "window"],
        )
        observed = GaugeMetricFamily(
            "sublane_account_window_observed_timestamp_seconds",
            "When the window was last read from response headers or the usage endpoint",
            labels=[*ACCOUNT, "window"],
        )
        stale = GaugeMetricFamily(
            "sublane_account_window_stale",
            "1 when the window's reading is cold, older than 2 minutes or past its reset",
            labels=[*ACCOUNT, "window"],
        )
        for row in view["accounts"]:
            labels = [row["name"], row["provider"]]
            for name in STATES:
                state.add_metric([*labels, name], 1.0 if row["state"] == name else 0.0)
            in_flight.add_metric(labels, row["in_flight"])
            limit.add_metric(labels, row["max_concurrency"])
            streak.add_metric(labels, row["failure_streak"])
            until = row["cooldown_until"]
            cooldown.add_metric([*labels, "account"], _left(until, now))
            account = pool.accounts.get(row["id"])
            if row["provider"] == "anthropic" and account is not None:
                cooldown.add_metric([*labels, "fable"], _left(account.fable_cooldown_until, now))
            for family, family_until in sorted(row.get("family_cooldowns", {}).items()):
                cooldown.add_metric([*labels, family], _left(family_until, now))
            for window, gauge in row["gauges"].items():
                window_labels = [*labels, WINDOW_LABELS.get(window, window)]
                stale.add_metric(window_labels, 1.0 if gauge["stale"] else 0.0)
                if gauge["utilization"] is not None:
                    utilization.add_metric(window_labels, gauge["utilization"])
                if gauge["resets_at"] is not None and not gauge["cold"]:
                    resets.add_metric(window_labels, gauge["resets_at"])
                if gauge["observed_at"] is not None:
                    observed.add_metric(window_labels, gauge["observed_at"])
        yield from (state, in_flight, limit, streak, cooldown, utilization, resets, observed, stale)
        yield GaugeMetricFamily(
            "sublane_pool_in_flight", "Model requests running in the pool", value=view["in_flight"]
        )
        yield GaugeMetricFamily(
            "sublane_pool_cap", "Instance-wide cap of upstream operations", value=view["cap"]
        )
        yield CounterMetricFamily(
            "sublane_records_dropped",
            "Request records that could not be saved at all",
            value=service.request_log.dropped,
        )

    def _traffic(self, providers: list[str]) -> Iterator[Metric]:
        tally = self.service.traffic
        requests = CounterMetricFamily(
            "sublane_requests",
            "Model attempts by outcome (success, incomplete, error, canceled, rejected), the "
            "provider that served or refused them, and model family",
            labels=["outcome", "provider", "family"],
        )
        for (outcome, provider, family), count in sorted(tally.requests.items()):
            requests.add_metric([outcome, provider, family], count)
        yield requests
        limited = CounterMetricFamily(
            "sublane_upstream_429",
            "Upstream 429 answers by scope: quota (a 5h, 7d or Fable window, a model family or "
            "a Codex limit was named as spent) or pacing (none was named)",
            labels=["provider", "scope"],
        )
        seen = dict(tally.upstream_429)
        for provider in providers:
            for scope in (QUOTA, PACING):  # zeros too, so a rate() has a series from the start
                seen.setdefault((provider, scope), 0)
        for (provider, scope), count in sorted(seen.items()):
            limited.add_metric([provider, scope], count)
        yield limited
        misses = CounterMetricFamily(
            "sublane_cache_misses",
            "Conversation turns that missed the prompt cache, by cause (first_turn, "
            "account_switch, ttl_expired, prefix_changed)",
            labels=["provider", "cause"],
        )
        reread = CounterMetricFamily(
            "sublane_cache_reread_tokens",
            "Input tokens paid for again because a turn missed the prompt cache, by cause",
            labels=["provider", "cause"],
        )
        for (provider, cause), count in sorted(tally.cache_misses.items()):
            misses.add_metric([provider, cause], count)
            reread.add_metric([provider, cause], tally.reread_tokens[provider, cause])
        yield misses
        yield reread
        yield _histogram(
            "sublane_added_latency_seconds",
            "SubLane's own time before a request leaves for the upstream: admission, the "
            "credential (an OAuth refresh included) and translation",
            tally.added_latency,
        )
        yield _histogram(
            "sublane_first_output_seconds",
            "From SubLane receiving a request to the first text, reasoning or tool-argument "
            "delta (R-REC-3)",
            tally.first_output,
        )


def _left(until: float | None, now: float) -> float:
    return max(0.0, until - now) if until is not None else 0.0


def _histogram(name: str, documentation: str, histogram: Histogram) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=["provider"])
    bounds = [floatToGoString(b) for b in histogram.bounds] + ["+Inf"]
    for provider, series in sorted(histogram.series.items()):
        cumulative, buckets = 0, []
        for bound, count in zip(bounds, series.counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        family.add_metric([provider], buckets, series.total)
    return family


async def scrape(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    try:
        await check_access(request, service)
    except GatewayError as err:
        return openai_error(err)
    try:
        # Accounts the CLI added or changed meanwhile show up, as on /api/accounts/runtime: a
        # cheap look (PRAGMA data_version) unless another process committed.
        await service.refresh_catalog()
    except Exception as exc:  # the pool as this server knows it beats no metrics
        log.error("metrics: could not check the account catalog: %s", type(exc).__name__)
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    body = encode(request.app[REGISTRY])
    return web.Response(body=body, headers={"Content-Type": content_type})


def add_routes(app: web.Application) -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PoolCollector(app[SERVICE]))
    app[REGISTRY] = registry
    app.router.add_get("/metrics", scrape)
