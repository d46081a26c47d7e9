"""One model attempt from admission to body close, shared by every client-facing model route.

An `Attempt` owns the lease and the request record. Whatever way the exchange ends (an answer,
an upstream error, the client going away or stalling, cancellation) `close()` releases the lease
exactly once and records exactly once (R-POOL-2, R-REC-1). The single places for what every
upstream response goes through are here too: the token refresh on a 401 (`open`), the quota
header feeds (`_observe`) and failure classification.

Bodies are relayed by `pump()` into a sink: raw bytes for same-protocol pass-through, rendered
events for a translated stream, a fold for a client that did not ask to stream, WebSocket
messages for a Responses socket turn. The upstream events are read into neutral events either
way, so the record is kept the same way on every route (core/translate/events.Tally).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from types import MethodType
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from sublane_desktop.accounts.problems import CredentialUnavailable
from sublane_desktop.core.affinity import conversation_digest
from sublane_desktop.core.cache_miss import DEFAULT_TTL, Turn, cache_ttl, warm_tokens
from sublane_desktop.core.clients import client_refusal
from sublane_desktop.core.cooldown import PACING, QUOTA, QuotaHit, cooldown_seconds
from sublane_desktop.core.errors import (
    WAIT_STATUSES,
    GatewayError,
    bounded_retry_after,
    parse_retry_after,
)
from sublane_desktop.core.gauges import LIMIT_PREFIX, family_of
from sublane_desktop.core.ids import new_request_id, random_hex
from sublane_desktop.core.json_edit import replace_top_level_string
from sublane_desktop.core.pool import Demand, Lease, Outcome
from sublane_desktop.core.records import RequestRecord, sanitize_code
from sublane_desktop.core.routing import BETA_1M, ModelRoute
from sublane_desktop.core.timeouts import UpstreamTimeouts
from sublane_desktop.core.translate.errors import read_error
from sublane_desktop.core.translate.events import NOTHING, Event, Tally
from sublane_desktop.providers import anthropic, anthropic_quota, antigravity, codex
from sublane_desktop.proxy.deadlines import deadlines
from sublane_desktop.proxy.errors import tag_request_id
from sublane_desktop.proxy.sse import SSESplitter

log = logging.getLogger(__name__)

# A client that accepts nothing for this long has its stream dropped and its slot freed.
WRITE_STALL_SECONDS = 60.0

ANTHROPIC_PASS_BACK = ("content-type", "retry-after", "request-id", "anthropic-organization-id")
ANTHROPIC_PASS_BACK_PREFIX = "anthropic-ratelimit-"


def outcome_for_status(status: int) -> str:
    """Every 5xx (529 included) and every 429 says the account is in trouble (R-FT-10)."""
    if status == 401:
        return Outcome.AUTH_FAILURE
    if status == 429 or status >= 500:
        return Outcome.FAILURE
    return Outcome.NEUTRAL if status >= 400 else Outcome.SUCCESS


def retry_after_of(headers: Any, now: float) -> float | None:
    return parse_retry_after(headers.get("retry-after"), now)


def passes_back(name: str, names: tuple[str, ...], prefix: str) -> bool:
    """Whether an upstream response header goes back to the client (the provider's list)."""
    name = name.lower()
    return name in names or name.startswith(prefix)


# What each upstream response header becomes for the client, judged once per name as the
# upstream spells it: upstreams send the same dozen names on every answer (bounded; tests
# empty it before each test, so every test runs the rule itself).
_DROP, _PASS, _RENAME = 0, 1, 2
_VERDICTS: dict[str, dict[str, int]] = {"anthropic": {}, "codex": {}}


def _verdict(provider: str, name: str) -> int:
    lower = name.lower()
    if lower == "retry-after":
        return _DROP  # never the raw upstream value (R-FT-4)
    if provider == "anthropic":
        passes = passes_back(name, ANTHROPIC_PASS_BACK, ANTHROPIC_PASS_BACK_PREFIX)
    else:
        passes = passes_back(name, codex.PASS_BACK, codex.PASS_BACK_PREFIX)
    if not passes:
        return _DROP
    return _RENAME if lower in ("request-id", "x-request-id") else _PASS  # ours is X-Request-ID


def passback_headers(attempt: Attempt, provider: str) -> dict[str, str]:
    """The upstream response headers a client may see, per provider, plus our request id."""
    upstream = attempt.upstream
    assert upstream is not None
    verdicts = _VERDICTS["anthropic" if provider == "anthropic" else "codex"]
    if len(verdicts) > 512:
        verdicts.clear()
    headers: dict[str, str] = {}
    for name, value in upstream.headers.items():
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = verdicts[name] = _verdict(provider, name)
        if verdict == _PASS:
            headers[name] = value
        elif verdict == _RENAME:
            headers["upstream-request-id"] = value
    headers["X-Request-ID"] = attempt.request_id
    if upstream.status in WAIT_STATUSES:
        # Every 429/503 a client sees carries a bounded Retry-After (R-PX-8), relayed ones
        # too: an hour-long upstream wait would stall a client another account could serve.
        headers["Retry-After"] = str(attempt.client_wait())
    return headers


class StallGuard:
    """Lets go of a client that accepts nothing for WRITE_STALL_SECONDS (R-POOL-2: its slot
    must not be held forever). One timer per stream, checked a few times per bound, instead of
    a timeout around every write: a write only notes when it started. Aborting the transport
    makes aiohttp cancel the handler, which closes the attempt."""

    def __init__(self, transport: Any, on_stall: Callable[[], None]) -> None:
        self.transport = transport
        # The owner of a method is held weakly: owner -> guard -> owner would be a reference
        # cycle per request, which only the garbage collector frees (profiled: its passes over
        # every request's objects cost the busy proxy several percent of its CPU). A plain
        # weak reference and the function, not `WeakMethod`, which cost more than the rest
        # of the guard (py-spy).
        self._owner: weakref.ref[Any] | None = None
        self._call: Callable[..., None] = on_stall
        if isinstance(on_stall, MethodType):
            self._owner, self._call = weakref.ref(on_stall.__self__), on_stall.__func__
        self.since: float | None = None
        self.time = asyncio.get_running_loop().time
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self._handle is None and self.transport is not None:
            self._handle = asyncio.get_running_loop().call_later(
                max(0.01, WRITE_STALL_SECONDS / 4), self._check
            )

    def _check(self) -> None:
        self._handle = None
        if self.since is not None and self.time() - self.since >= WRITE_STALL_SECONDS:
            if self._owner is None:
                self._call()
            elif (owner := self._owner()) is not None:
                self._call(owner)
            self.transport.abort()
            return
        self.start()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def write(self, sending: Any) -> None:
        self.since = self.time()
        try:
            await sending
        finally:
            self.since = None


# Set by `Attempt._post` around one upstream request: what to call once it has a connection.
_connected: ContextVar[Callable[[], None] | None] = ContextVar("sublane_connected", default=None)


class ClockedConnector(aiohttp.TCPConnector):
    """The upstream session's connector. Once a request has its connection (new or pooled),
    its header clock starts, so the connect and header phases are timed apart (R-FT-1).

    A context variable carries the per-request hook; aiohttp's request tracing would do the
    same but sends every tracing signal of every request through it, which cost more than
    the timing itself (bench_proxy)."""

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        connection = await super().connect(req, traces, timeout)
        started = _connected.get()
        if started is not None:
            started()
        return connection


@functools.lru_cache(maxsize=8)
def _connect_timeout(seconds: float) -> aiohttp.ClientTimeout:
    """aiohttp's part of the phase timeouts: connecting only (the header clock and the body's
    idle watch are ours). One object per setting, not one per request."""
    return aiohttp.ClientTimeout(total=None, connect=None, sock_connect=seconds, sock_read=None)


class HeadersTimeout(Exception):
    """The upstream took the request but sent no response headers in time."""


class ClientGone(Exception):
    """The client stopped taking the answer: disconnected, or stalled past the bound."""

    def __init__(self, code: str = "client_disconnected") -> None:
        super().__init__(code)
        self.code = code


@dataclass
class UpstreamCall:
    url: str
    headers: dict[str, str]
    body: bytes
    # Further URLs of the same upstream, tried in turn when one is unreachable, rate-limited or
    # out of capacity (Antigravity's hosts: `antigravity.FALLBACK_STATUSES`).
    fallbacks: tuple[str, ...] = ()


# The header both upstreams accept as a client-chosen request id (PROTOCOLS.md: Codex sends it
# itself; Anthropic's API accepts and ignores it), used for unbound requests only.
CORRELATION_HEADER = "x-client-request-id"


def sendable(headers: dict[str, str]) -> dict[str, str]:
    """Headers that can go on the wire: a forwarded client header whose value is not valid
    text (bytes such as 0xff arrive as lone surrogates) is dropped, not a 500 (R-FT-3)."""
    clean = {}
    for name, value in headers.items():
        if not value.isascii():  # isascii is a flag check; almost every value is ASCII
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                continue
        clean[name] = value
    return clean


Builder = Callable[[Mapping[str, Any]], UpstreamCall]
# One upstream SSE event: its data text, the neutral events read from it, its parsed payload.
Frame = tuple[str, tuple[Event, ...], "dict[str, Any] | None"]


class Sink(Protocol):
    """Where a relayed stream goes. `take` may raise ClientGone."""

    @property
    def reads_all(self) -> bool:  # False: it forwards bytes, so bulk deltas need not be read
        ...

    async def take(self, chunk: bytes, batch: list[Frame]) -> None: ...
    async def fail(self, message: str, code: str = "upstream_error") -> None: ...
    async def end(self, tally: Tally) -> None: ...


class Attempt:
    """One model attempt: admission, the upstream exchange, and its record."""

    def __init__(
        self,
        service: Any,
        identity: Any,
        route: ModelRoute,
        *,
        protocol: str,
        operation: str,
        transport: Any = None,
        body: Mapping[str, Any] | None = None,
        raw: bytes | None = None,
        claude_code: bool = False,
    ) -> None:
        self.service = service
        self.route = route
        # Claude Code may be served by Anthropic subscription logins; no other client is
        # (R-WF-2). Only the Messages route can tell: every translated client is another.
        self.claude_code = claude_code
        self.transport = transport  # the client's, to tell "client gone" from "upstream gone"
        self.request_id = new_request_id()
        self.t0 = service.clock.monotonic()
        self.record = RequestRecord(
            request_id=self.request_id,
            user_id=identity.user_id,
            key_id=identity.key_id,
            group_id=identity.group_id,
            provider=route.provider,
            model=route.upstream_model,
            protocol=protocol,
            operation=operation,
            started_at=service.clock.now(),
        )
        self.group_id = identity.group_id
        self.conversation: str | None = None  # the digest, kept in memory only
        self.spilled_from: str | None = None  # the provider asked for, when another served
        # How long the provider keeps this request's prompt cache (R-CF-1).
        self.cache_ttl = cache_ttl(route.provider, body, raw) if body is not None else DEFAULT_TTL
        self.written_tokens: int | None = None
        self.lease: Lease | None = None
        self.outcome = Outcome.NEUTRAL
        self.retry_after: float | None = None
        # The quota window a 429 named (R-OBS-3); None: a 429 is pacing
        self.quota_hit: QuotaHit | None = None
        self.upstream: aiohttp.ClientResponse | None = None
        self.client_gone: str | None = None
        self.closed = False
        self._guard: StallGuard | None = None  # made by the first write: most answers are whole
        self.timeouts = UpstreamTimeouts.from_settings(service.settings)  # per request
        # For GET /metrics (R-OBS-1): when the request left for the upstream, and whether a
        # 429 spent a model family's or a Codex limit's quota (quota_hit says the windows).
        self.sent_at: float | None = None
        self.family_spent = False

    def _stalled(self) -> None:
        self.client_gone = "client_stalled"

    @property
    def guard(self) -> StallGuard:
        if self._guard is None:
            self._guard = StallGuard(self.transport, self._stalled)
        return self._guard

    @property
    def account(self) -> Any:
        assert self.lease is not None
        return self.lease.account

    def ms(self) -> int:
        return int((self.service.clock.monotonic() - self.t0) * 1000)

    # --- admission --------------------------------------------------------------------------------

    def admit(self, conversation_key: str | None) -> None:
        """Reserve a slot (R-POOL-2). A pool refusal is recorded here and raised."""
        demand = Demand(
            group_id=self.group_id,
            route=self.route,
            conversation=(
                conversation_digest(conversation_key, self.route.provider)
                if conversation_key
                else None
            ),
            claude_code=self.claude_code,
        )
        try:
            self.lease = self.service.pool.acquire(demand)
        except GatewayError as err:
            if err.code != "capacity_exhausted":  # global admission: no record (R-REC-1)
                record = self.record
                record.outcome, record.error_code = "rejected", err.code
                if demand.conversation is not None:  # the bound account that said no
                    record.account_id = self.service.pool.bindings.get(
                        (demand.group_id, demand.conversation)
                    )
                record.duration_ms = self.ms()
                self.service.record(record)
            if err.code in ("account_cooling", "quota_exhausted"):
                refresh = getattr(self.service, "refresh_stale_quota", None)
                if refresh is not None:
                    for provider in (self.route.provider, *self.route.spill):
                        refresh(provider)
            self.closed = True
            raise
        self.record.account_id = self.lease.account.id
        self.conversation = demand.conversation
        provider = self.lease.account.provider
        if provider != self.route.provider:
            # Spilled to another provider (R-AG-3): from here on the request is that
            # provider's, and its record says which provider served it.
            self.spilled_from = self.route.provider
            self.route = replace(self.route, provider=provider, spill=())
            self.record.provider = provider

    # --- the upstream exchange --------------------------------------------------------------------

    async def open(self, build: Builder) -> aiohttp.ClientResponse:
        """Send the request; on a 401 with an OAuth token, refresh once and retry once (R-ST-3).

        Raises GatewayError (already recorded) when no answer could be had at all.
        """
        account = self.account
        record = self.record
        try:
            credential = self.service.ready_credential(account) or await self.service.credential(
                account
            )
        except antigravity.ProjectUnknown as exc:  # its text is ours and secret-free
            record.outcome, record.error_code = "error", "project_unknown"
            raise GatewayError("upstream_error", f"account {account.name}: {exc}") from None
        except CredentialUnavailable as exc:  # words of ours: the account, why, and the fix
            record.outcome, record.error_code = "error", "credential_unavailable"
            raise GatewayError("auth_failed", str(exc)) from None
        except Exception as exc:  # keyring trouble: never echo the secret store's text
            log.error("credential for account %s unavailable: %s", account.id, type(exc).__name__)
            record.outcome, record.error_code = "error", "credential_unavailable"
            raise GatewayError(
                "auth_failed", f"credential for account {account.name} is unavailable"
            ) from None
        call = self._correlated(build(credential))
        self.sent_at = self.service.clock.monotonic()
        try:
            self.upstream = await self._post_hosts(call)
            if self.upstream.status in self._auth_statuses() and "api_key" not in credential:
                # An expired OAuth token: refresh (shared with any concurrent refresh) and
                # retry once; a second 401 is a real auth failure.
                self.upstream.close()
                fresh = await self.service.refresh_credential(account, seen=credential)
                if fresh.get("access_token") != credential.get("access_token"):
                    call = self._correlated(build(fresh))
                self.upstream = await self._post_hosts(call)
        except HeadersTimeout:
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_timeout"
            log.warning(
                "upstream %s sent no response headers within %gs",
                account.name,
                self.timeouts.headers,
            )
            raise GatewayError(
                "upstream_timeout",
                f"the upstream for account {account.name}"
                f" sent no answer within {self.timeouts.headers:g}s",
            ) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_unreachable"
            log.warning("upstream %s unreachable: %s", account.name, type(exc).__name__)
            raise GatewayError(
                "upstream_unreachable", f"could not reach the upstream for account {account.name}"
            ) from None
        self._observe(self.upstream)
        return self.upstream

    async def _post_hosts(self, call: UpstreamCall) -> aiohttp.ClientResponse:
        """`_post` to the call's URL, then to each fallback in turn while a host is unreachable
        or answers a status that hands over (Antigravity: daily, then production)."""
        for fallback in call.fallbacks:
            try:
                upstream = await self._post(call)
            except HeadersTimeout:
                raise  # a host that accepted the request and went silent: no second wait
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                log.info("upstream host unreachable (%s); trying the next", type(exc).__name__)
            else:
                if upstream.status not in antigravity.FALLBACK_STATUSES:
                    return upstream
                upstream.close()
                log.info("upstream host answered %s; trying the next", upstream.status)
            call = replace(call, url=fallback)
        return await self._post(call)

    async def _post(self, call: UpstreamCall) -> aiohttp.ClientResponse:
        """One upstream request up to its response headers, under the connect and header
        timeouts (R-FT-1). The body's idle timeout is the readers' (`_idle_watch`)."""
        limits = self.timeouts
        timeout = _connect_timeout(limits.connect)
        # The header clock starts once the request has its connection (ClockedConnector);
        # until then only connecting can take time, and that has its own, shorter limit.
        clock = deadlines()
        waiting = asyncio.timeout(None)  # its deadline is kept by `clock`
        time = clock.time

        def connected() -> None:
            clock.set(waiting, time() + limits.headers)

        hook = _connected.set(connected)
        try:
            async with waiting:
                clock.set(waiting, time() + limits.connect + limits.headers)
                try:
                    return await self.service.http.post(
                        call.url, data=call.body, headers=call.headers, timeout=timeout
                    )
                finally:
                    clock.drop(waiting)
        except TimeoutError:
            if waiting.expired():
                raise HeadersTimeout() from None
            raise  # aiohttp's own connect timeout: unreachable
        finally:
            _connected.reset(hook)

    def _correlated(self, call: UpstreamCall) -> UpstreamCall:
        """An unbound request carries a fresh random correlation id upstream (R-POOL-6).

        Without one, an upstream could tie unrelated one-off requests together as one session;
        the id is made per attempt and never stored anywhere.
        """
        if self.lease is not None and not self.lease.bound:
            call.headers[CORRELATION_HEADER] = random_hex(16)
        call.headers = sendable(call.headers)
        return call

    def _auth_statuses(self) -> tuple[int, ...]:
        """Answers that mean "this token is no good": Google says 403 as often as 401."""
        return (401, 403) if self.account.provider == "antigravity" else (401,)

    def _observe(self, upstream: aiohttp.ClientResponse) -> None:
        """Every upstream response passes here once: status, quota feeds, blame."""
        account = self.account
        self.record.upstream_status = upstream.status
        self.service.observe_headers(account, upstream.headers)
        if account.provider == "codex":
            quota = codex.quota_from_headers(upstream.headers, self.service.clock.now())
            observe = getattr(self.service, "observe_codex_quota", None)
            if quota is not None and observe is not None:
                observe(account, quota)
            scoped = codex.active_limit(upstream.headers)
            if scoped is not None:  # this model draws on its own limit (R-WF-4)
                model_limits = account.gauges.model_limits
                model_limits[self.route.upstream_model] = LIMIT_PREFIX + codex.limit_id(scoped)
        self.outcome = outcome_for_status(upstream.status)
        if upstream.status in self._auth_statuses():  # still refused after the refresh
            self.outcome = Outcome.AUTH_FAILURE
        if self.outcome == Outcome.FAILURE:
            self.retry_after = retry_after_of(upstream.headers, self.service.clock.now())
            if account.provider == "anthropic" and upstream.status == 429:
                self.quota_hit = anthropic_quota.named_window(upstream.headers)
            if (
                account.provider == "anthropic"
                and upstream.status == 429
                and self.route.fable
                and self.retry_after is None
                and not anthropic_quota.account_wide_rejection(upstream.headers)
            ):
                # A model-scoped 429: rest only the Fable bucket (R-LANE-7).
                self.outcome = Outcome.FABLE_FAILURE

    async def read_whole(self) -> bytes:
        """The whole upstream body. An upstream that drops it or falls silent for the idle
        timeout raises GatewayError (recorded; the account is blamed)."""
        assert self.upstream is not None
        content = self.upstream.content
        if content.is_eof():  # a small answer came in whole with its headers: no wait at all
            return content.read_nowait()
        chunks: list[bytes] = []
        idle = self.timeouts.idle
        try:
            async with asyncio.timeout(idle) as watch:
                async for chunk in content.iter_any():
                    watch.reschedule(asyncio.get_running_loop().time() + idle)
                    chunks.append(chunk)
        except TimeoutError:
            self.outcome = Outcome.FAILURE
            self.record.outcome, self.record.error_code = "incomplete", "upstream_timeout"
            log.warning("upstream body silent for %gs", idle)
            raise GatewayError(
                "upstream_timeout", f"the upstream fell silent for {idle:g}s"
            ) from None
        except aiohttp.ClientError as exc:
            self.outcome = Outcome.FAILURE
            self.record.outcome, self.record.error_code = "error", "upstream_dropped"
            log.warning("upstream body lost: %s", type(exc).__name__)
            raise GatewayError("upstream_error", "upstream connection lost") from None
        return b"".join(chunks)

    def client_wait(self) -> int:
        """The Retry-After for this attempt's 429/503: the upstream's usable wait, else the
        rung of the cooldown ladder the failure puts the account on (R-FT-4)."""
        if self.retry_after is not None:
            return bounded_retry_after(self.retry_after)
        account = self.account
        streak = (
            account.fable_streak
            if self.outcome == Outcome.FABLE_FAILURE
            else account.failure_streak
        )
        return bounded_retry_after(cooldown_seconds(streak + 1))

    def note_error(self, data: bytes) -> tuple[str | None, str]:
        """Record an upstream error answer; (error type, message) for the client's shape."""
        assert self.upstream is not None
        status = self.upstream.status
        if self.account.provider == "antigravity":
            google = antigravity.read_google_error(data, status, self.service.clock.now())
            kind, message = (google.status.lower() if google.status else None), google.message
            if google.retry_after is not None and self.outcome == Outcome.FAILURE:
                self.retry_after = google.retry_after  # RetryInfo.retryDelay (R-POOL-7)
            if status == 429 and google.quota_exhausted:
                self._rest_family(google)
        else:
            kind, message = read_error(data)
        kind = sanitize_code(kind, "") or None if kind else None  # R-FT-10: no upstream prose
        self.record.outcome = "error"
        self.record.error_code = kind or f"http_{status}"
        refusal = client_refusal(message) if self.account.provider == "anthropic" else None
        if refusal is not None and status < 500 and status != 429:
            # The upstream refuses this client, not the account (R-WF-2): no cooldown, no
            # auth failure; the record names the refusal and the client reads its words.
            self.outcome = Outcome.NEUTRAL
            self.record.error_code = refusal
        if status == 429 and self.account.provider == "codex":
            now = self.service.clock.now()
            resets = codex.usage_limit_retry_after(data, now)
            if resets is not None:  # a spent subscription window: rest until it resets
                self.retry_after = resets
            self.quota_hit = codex.named_window(self.upstream.headers, resets, now)
            scoped = codex.active_limit(self.upstream.headers)
            if scoped is not None:
                self._rest_codex_limit(scoped, resets)
        return kind, message

    def _rest_codex_limit(self, limit: str, resets: float | None) -> None:
        """A 429 naming a per-model limit (`x-codex-active-limit`): the models of that limit
        rest until its reset, the account keeps serving the others (R-WF-4), as an
        Antigravity family does (`_observe` has noted which limit this model draws on)."""
        window = LIMIT_PREFIX + codex.limit_id(limit)
        wait = resets if resets is not None else cooldown_seconds(1)
        self.service.pool.rest_family(self.account, window, self.service.clock.now() + wait)
        self.outcome = Outcome.NEUTRAL  # not the account's failure: no account-wide cooldown
        self.family_spent = True
        self.retry_after = wait

    def _rest_family(self, google: antigravity.GoogleError) -> None:
        """A spent per-model quota (QUOTA_EXHAUSTED): that model's family rests until the reset
        Google names, and the account keeps serving the other families (R-WF-5)."""
        family = family_of(google.model or antigravity.upstream_model(self.route.upstream_model))
        if family is None:
            return
        wait = google.retry_after if google.retry_after is not None else cooldown_seconds(1)
        self.service.pool.rest_family(self.account, family, self.service.clock.now() + wait)
        self.outcome = Outcome.NEUTRAL  # not the account's failure: no account-wide cooldown
        self.family_spent = True
        self.retry_after = wait

    def take_counts(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        cached_tokens: int | None,
        written_tokens: int | None = None,
    ) -> None:
        self.written_tokens = written_tokens
        self.record.input_tokens = input_tokens
        self.record.output_tokens = output_tokens
        self.record.cached_tokens = cached_tokens

    def take_whole(self, events: tuple[Event, ...]) -> Tally:
        """Record a whole (non-streamed) translated answer the way pump records a stream."""
        tally = Tally()
        tally.feed(events)
        self.take_counts(tally.input_tokens, tally.output_tokens, tally.cached_tokens)
        outcome, code, blame = tally.verdict()
        self.record.outcome, self.record.error_code = outcome, code
        if blame:
            self.outcome = Outcome.FAILURE
        return tally

    # --- streams ----------------------------------------------------------------------------------

    async def pump(self, reader: Any, sink: Sink) -> None:
        """Relay the upstream SSE body into `sink` as it arrives, watching it for the record."""
        assert self.upstream is not None
        record = self.record
        record.outcome = "incomplete"
        splitter = SSESplitter()
        tally = Tally()
        # After the first output a sink that forwards bytes needs none of the bulk deltas
        # read: the record only wants how the stream ends.
        skippable = frozenset() if sink.reads_all else reader.BULK
        self.guard.start()
        idle = self.timeouts.idle
        clock = asyncio.get_running_loop().time
        try:
            # Silence from the upstream is a fault; a long stream is not (R-FT-1). The watch
            # is off while the client is being written to: a slow client is the stall
            # guard's business, not the upstream's.
            async with asyncio.timeout(idle) as watch:
                async for chunk in self.upstream.content.iter_any():
                    watch.reschedule(None)
                    batch: list[Frame] = []
                    for name, data in splitter.feed(chunk):
                        if name in skippable and tally.first_output:
                            batch.append((data, NOTHING, None))
                            continue
                        events = reader.feed(name, data)
                        if events and tally.feed(events) and record.first_token_ms is None:
                            record.first_token_ms = self.ms()
                        batch.append((data, events, reader.payload))
                    await sink.take(chunk, batch)
                    watch.reschedule(clock() + idle)
        except ClientGone as gone:
            self.client_gone = gone.code
            return
        except TimeoutError:
            if self._transport_closing():
                self.client_gone = "client_disconnected"
                return
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "incomplete", "upstream_timeout"
            log.warning("upstream stream silent for %gs", idle)
            await self._quietly(
                sink.fail(f"the upstream fell silent for {idle:g}s", "upstream_timeout")
            )
            return
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
            if isinstance(exc, aiohttp.ClientConnectionResetError) or self._transport_closing():
                self.client_gone = "client_disconnected"
                return
            # The upstream dropped mid-stream: tell the client in-band, cool the account.
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_dropped"
            await self._quietly(sink.fail("upstream connection lost"))
            return
        self.take_counts(
            tally.input_tokens, tally.output_tokens, tally.cached_tokens, tally.written_tokens
        )
        outcome, code, blame = tally.verdict()
        record.outcome, record.error_code = outcome, code
        if blame:
            self.outcome = Outcome.FAILURE
        await self._quietly(sink.end(tally))

    def _transport_closing(self) -> bool:
        return self.transport is not None and self.transport.is_closing()

    async def _quietly(self, step: Any) -> None:
        try:
            await step
        except ClientGone as gone:
            self.client_gone = self.client_gone or gone.code

    async def write(
        self, response: web.StreamResponse, data: bytes = b"", eof: bool = False
    ) -> None:
        """Write to the client under the stall guard; a client that is gone is ClientGone."""
        try:
            await self.guard.write(response.write_eof() if eof else response.write(data))
        except (ConnectionError, aiohttp.ClientConnectionResetError):
            raise ClientGone(self.client_gone or "client_disconnected") from None

    # --- the end ----------------------------------------------------------------------------------

    def close(self, exc: BaseException | None) -> None:
        """Runs on every exit path, cancellation included: release once, record once."""
        if self.closed:
            return
        self.closed = True
        if self._guard is not None:
            self._guard.stop()
        if self.upstream is not None:
            self.upstream.close()  # a cancelled client cancels the upstream request too
        record = self.record
        if self.client_gone or isinstance(exc, (asyncio.CancelledError, ConnectionResetError)):
            self.outcome = Outcome.NEUTRAL
            record.outcome = "canceled"
            record.error_code = self.client_gone or "client_disconnected"
        elif exc is not None:
            # Our own fault, not the account's: it is not cooled. The error middleware logs
            # the exception once, with this attempt's request id (R-FT-3).
            self.outcome = Outcome.NEUTRAL
            record.outcome, record.error_code = "error", "internal_error"
        if self.lease is not None:
            self.lease.release(
                self.outcome, self.retry_after, record.upstream_status, self.quota_hit
            )
        record.duration_ms = self.ms()
        self._settle_cache()
        if self.sent_at is not None:
            spent = self.quota_hit is not None or self.family_spent
            self.service.traffic.count_upstream(
                record.provider,
                self.sent_at - self.t0,
                QUOTA if spent else PACING,
                record.upstream_status,
            )
        self.service.record(record)

    def _settle_cache(self) -> None:
        """The turn's cache-miss cause and cost (R-CF-1), for a bound turn with usage counts.

        Unbound requests and attempts without counts (errors, cancellations) stay null and
        leave the conversation's last turn as it was.
        """
        record = self.record
        turns = getattr(self.service, "turns", None)
        if (
            turns is None
            or self.conversation is None
            or self.lease is None
            or record.input_tokens is None
            or record.cached_tokens is None
        ):
            return
        provider = self.account.provider
        turn = Turn(
            account_id=self.account.id,
            started_at=record.started_at,
            input_tokens=record.input_tokens,
            cached_tokens=record.cached_tokens,
            ttl=self.cache_ttl,
        )
        warm = warm_tokens(provider, record.input_tokens, record.cached_tokens, self.written_tokens)
        model = self.route.upstream_model  # a provider caches per model
        previous = turns.previous(self.group_id, self.conversation, model)
        verdict = turns.settle(
            self.group_id,
            self.conversation,
            turn,
            model=model,
            ended_at=self.service.clock.now(),
            warm_tokens=warm,
        )
        record.cache_miss, record.reread_tokens = verdict.cause, verdict.reread_tokens
        if verdict.is_miss and previous is not None:  # the words of R-CF-3 need these
            record.previous_account_id = previous.account_id
            record.idle_seconds = round(max(0.0, record.started_at - previous.ended_at), 3)


async def serve(
    attempt: Attempt,
    conversation_key: str | None,
    body: Callable[[Attempt], Any],
    render_error: Callable[..., web.Response],
) -> web.StreamResponse:
    """Admit, run the route's exchange, close: the frame every HTTP model route shares."""
    try:
        attempt.admit(conversation_key)
    except GatewayError as err:
        return render_error(err, attempt.request_id)
    try:
        response = await body(attempt)
    except GatewayError as err:  # already recorded by the step that raised it
        response = render_error(err, attempt.request_id)
    except BaseException as exc:  # cancellation too: the lease must still be released
        attempt.close(exc)
        tag_request_id(exc, attempt.request_id)
        raise
    attempt.close(None)
    return response


# --- sinks ----------------------------------------------------------------------------------------


class PassThrough:
    """Same protocol both sides: the upstream bytes go to the client untouched."""

    reads_all = False

    def __init__(
        self,
        attempt: Attempt,
        response: web.StreamResponse,
        fail_frame: Callable[[str, str], bytes],
    ) -> None:
        self.attempt = attempt
        self.response = response
        self.fail_frame = fail_frame

    async def take(self, chunk: bytes, batch: list[Frame]) -> None:
        await self.attempt.write(self.response, chunk)

    async def fail(self, message: str, code: str = "upstream_error") -> None:
        await self.attempt.write(self.response, self.fail_frame(message, code))

    async def end(self, tally: Tally) -> None:
        await self.attempt.write(self.response, eof=True)


class Rendered:
    """A translated stream: neutral events rendered into the client's protocol as they come."""

    reads_all = True

    def __init__(
        self,
        attempt: Attempt,
        response: web.StreamResponse,
        renderer: Any,
        frame: Callable[[Any], bytes],
    ) -> None:
        self.attempt = attempt
        self.response = response
        self.renderer = renderer
        self.frame = frame

    async def _send(self, payloads: list[Any]) -> None:
        if payloads:
            frame = self.frame
            await self.attempt.write(self.response, b"".join(frame(p) for p in payloads))

    async def take(self, chunk: bytes, batch: list[Frame]) -> None:
        render = self.renderer.render
        await self._send([p for _, events, _ in batch for event in events for p in render(event)])

    async def fail(self, message: str, code: str = "upstream_error") -> None:
        await self._send(self.renderer.fail(message, code))

    async def end(self, tally: Tally) -> None:
        if not self.renderer.done:
            await self._send(self.renderer.fail("the upstream stream ended before its last event"))
        await self.attempt.write(self.response, eof=True)


class Fold:
    """A client that did not ask to stream: the stream is folded into one answer (or, for
    a same-protocol answer, only its terminal event is wanted: `reads_all=False`)."""

    def __init__(self, transcript: Any, reads_all: bool = True) -> None:
        self.transcript = transcript
        self.reads_all = reads_all
        self.failure: str | None = None
        self.code: str | None = None

    async def take(self, chunk: bytes, batch: list[Frame]) -> None:
        for _, events, _ in batch:
            self.transcript.feed(events)

    async def fail(self, message: str, code: str = "upstream_error") -> None:
        self.failure, self.code = message, code

    async def end(self, tally: Tally) -> None:
        if tally.finished is None:
            self.failure = "the upstream stream ended before its last event"


def named_frame(payload: dict[str, Any]) -> bytes:
    """An SSE frame named after its payload's type (Anthropic and Responses streams)."""
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def data_frame(payload: Any) -> bytes:
    """An unnamed SSE frame (Chat Completions); a string payload goes verbatim ([DONE])."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {text}\n\n".encode()


async def start_stream(request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers=headers)
    response.headers["Content-Type"] = "text/event-stream"
    response.headers["Cache-Control"] = "no-cache"
    await response.prepare(request)
    return response


# --- upstream requests ----------------------------------------------------------------------------


def anthropic_builder(
    service: Any,
    account: Any,
    client_headers: Mapping[str, str],
    route: ModelRoute,
    body: bytes,
    path: str = "/v1/messages",
    query: str = "",
    *,
    relayed: bool = False,
) -> Builder:
    """The Messages call. A relayed client request (`relayed`, R-WF-1) keeps every header the
    client sent but what stays here (`anthropic.relayed_headers`); a body SubLane composed
    (translated) goes with the client's identity headers only."""
    base = (account.base_url or service.base_url("anthropic")).rstrip("/")
    url = base + path + (f"?{query}" if query else "")
    betas = [BETA_1M] if route.long_context else []
    headers_for = anthropic.relayed_headers if relayed else anthropic.upstream_headers

    def build(credential: Mapping[str, Any]) -> UpstreamCall:
        headers = headers_for(client_headers, credential, extra_betas=betas)
        return UpstreamCall(url, headers, body)

    return build


def codex_builder(
    service: Any,
    account: Any,
    client_headers: Mapping[str, str],
    route: ModelRoute,
    body: dict[str, Any],
    operation: str = "responses",
    *,
    raw: bytes | None = None,
    query: str = "",
    socket: bool = False,
) -> Builder:
    """The upstream call for a Responses body. Codex CLI's own request to a ChatGPT-login
    account, when its bytes are at hand (`raw`), goes as it was sent (R-WF-1): its headers
    but the credential, its body bytes but a changed model name; everything else is shaped
    for the account (`codex.shape_body`)."""

    def build(credential: Mapping[str, Any]) -> UpstreamCall:
        base = codex.base_for(
            account.base_url, credential, service.base_url("codex"), service.base_url("openai")
        )
        if raw is not None and codex.faithful(client_headers, credential):
            sent = raw
            if body.get("model") != route.upstream_model:
                sent = replace_top_level_string(raw, "model", route.upstream_model)
            url = codex.endpoint(base, credential, operation) + (f"?{query}" if query else "")
            headers = codex.passthrough_headers(
                client_headers, credential, socket=socket, turn=body if socket else None
            )
            return UpstreamCall(url, headers, sent)
        if operation == "compact":
            shaped = codex.compact_body(body, route.upstream_model)
        else:
            shaped = codex.shape_body(body, credential, route.upstream_model)
        headers = codex.upstream_headers(client_headers, credential, stream=operation != "compact")
        return UpstreamCall(
            codex.endpoint(base, credential, operation), headers, json.dumps(shaped).encode()
        )

    return build


def antigravity_builder(
    service: Any, account: Any, route: ModelRoute, request: dict[str, Any], *, stream: bool
) -> Builder:
    """The v1internal call for a translated Gemini request (the project comes with the
    credential: imported, or discovered once and kept), to the account's hosts in order, as
    the client version the settings name (R-WF-5)."""
    hosts = service.antigravity.hosts(account)
    version = service.antigravity.version()
    model = antigravity.upstream_model(route.upstream_model)

    def build(credential: Mapping[str, Any]) -> UpstreamCall:
        body = antigravity.envelope(str(credential.get("project_id") or ""), model, request)
        return UpstreamCall(
            antigravity.endpoint(hosts[0], stream),
            antigravity.upstream_headers(credential, stream=stream, version=version),
            json.dumps(body).encode(),
            tuple(antigravity.endpoint(host, stream) for host in hosts[1:]),
        )

    return build
