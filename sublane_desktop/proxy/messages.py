"""POST /v1/messages and /v1/messages/count_tokens, relayed to an Anthropic account."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
from aiohttp import web

from sublane_desktop.proxy import SERVICE

from sublane_desktop.core.affinity import conversation_digest, conversation_key
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.ids import new_request_id
from sublane_desktop.core.pool import Demand, Lease, Outcome
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.core.routing import BETA_1M, route_model
from sublane_desktop.providers import anthropic, anthropic_quota
from sublane_desktop.proxy.errors import anthropic_error
from sublane_desktop.proxy.intake import authenticate, json_body
from sublane_desktop.proxy.sse import SSESplitter

log = logging.getLogger(__name__)

# Upstream response headers a client may care about; the rest stays behind the proxy.
PASS_BACK = ("content-type", "retry-after", "request-id", "anthropic-organization-id")
RATELIMIT_PREFIX = "anthropic-ratelimit-"
FAILURE_STATUSES = {429, 500, 502, 503, 504, 529}


def outcome_for_status(status: int) -> str:
    if status == 401:
        return Outcome.AUTH_FAILURE
    if status in FAILURE_STATUSES:
        return Outcome.FAILURE
    return Outcome.NEUTRAL if status >= 400 else Outcome.SUCCESS


def retry_after_of(headers: Any) -> float | None:
    value = headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 < seconds < 86400 * 7 else None


def _client_headers(upstream: aiohttp.ClientResponse, request_id: str) -> dict[str, str]:
    headers = {k: v for k, v in upstream.headers.items() if k.lower() in PASS_BACK
               or k.lower().startswith(RATELIMIT_PREFIX)}
    if "request-id" in {k.lower() for k in headers}:
        headers["upstream-request-id"] = headers.pop("request-id", headers.pop("Request-Id", ""))
    headers["X-Request-ID"] = request_id
    return headers


class MessagesRoute:
    def __init__(self, operation: str) -> None:
        self.operation = operation  # "messages" | "count_tokens"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        service = request.app[SERVICE]
        try:
            identity = await authenticate(request)
            body, raw = await json_body(request)
        except GatewayError as err:
            return anthropic_error(err)
        route = route_model(body.get("model"))
        if route is None:
            return anthropic_error(GatewayError(
                "unknown_model", f"unknown model {str(body.get('model'))[:80]!r}", param="model"
            ))
        if route.provider != "anthropic":
            return anthropic_error(GatewayError(
                "unknown_model",
                f"model {route.upstream_model!r} is served by {route.provider}, which this"
                " route cannot reach yet",
                param="model",
            ))

        request_id = new_request_id()
        started = service.clock.now()
        t0 = service.clock.monotonic()
        record = RequestRecord(
            request_id=request_id, user_id=identity.user_id, key_id=identity.key_id,
            group_id=identity.group_id, provider=route.provider, model=route.upstream_model,
            protocol="anthropic", operation=self.operation, started_at=started,
        )
        key = conversation_key(request.headers, body) if self.operation == "messages" else None
        demand = Demand(
            group_id=identity.group_id,
            route=route,
            conversation=conversation_digest(key, route.provider) if key else None,
        )
        try:
            lease = service.pool.acquire(demand)
        except GatewayError as err:
            if err.code != "capacity_exhausted":  # global admission: no record (R-REC-1)
                record.outcome, record.error_code = "rejected", err.code
                if demand.conversation is not None:  # the bound account that said no
                    record.account_id = service.pool.bindings.get(
                        (demand.group_id, demand.conversation))
                record.duration_ms = int((service.clock.monotonic() - t0) * 1000)
                service.record(record)
            return anthropic_error(err, request_id)

        record.account_id = lease.account.id
        relay = _Relay(request, service, lease, record, t0)
        try:
            response = await relay.run(body, raw, route)
        except BaseException as exc:  # cancellation too: the lease must still be released
            relay.close(exc)
            raise
        relay.close(None)
        return response


class _Relay:
    """One upstream exchange; owns the lease and the record until the body is closed."""

    def __init__(self, request: web.Request, service: Any, lease: Lease,
                 record: RequestRecord, t0: float) -> None:
        self.request = request
        self.service = service
        self.lease = lease
        self.record = record
        self.t0 = t0
        self.outcome = Outcome.NEUTRAL
        self.retry_after: float | None = None
        self.upstream: aiohttp.ClientResponse | None = None
        self.client_gone = False

    def _client_gone(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()

    def _ms(self) -> int:
        return int((self.service.clock.monotonic() - self.t0) * 1000)

    async def run(self, body: dict[str, Any], raw: bytes, route: Any) -> web.StreamResponse:
        record = self.record
        account = self.lease.account
        try:
            credential = await self.service.credential(account)
        except Exception as exc:  # keyring trouble: never echo the secret store's text
            log.error("credential for account %s unavailable: %s", account.id, type(exc).__name__)
            record.outcome, record.error_code = "error", "credential_unavailable"
            return anthropic_error(GatewayError(
                "auth_failed", f"credential for account {account.name} is unavailable"
            ), record.request_id)

        if route.upstream_model != body.get("model"):
            body = dict(body, model=route.upstream_model)
            raw = json.dumps(body).encode()
        betas = [BETA_1M] if route.long_context else []
        headers = anthropic.upstream_headers(self.request.headers, credential, extra_betas=betas)
        base = (account.base_url or self.service.base_url("anthropic")).rstrip("/")
        path = "/v1/messages" if self.record.operation == "messages" else "/v1/messages/count_tokens"
        url = base + path + (f"?{self.request.query_string}" if self.request.query_string else "")

        try:
            self.upstream = await self.service.http.post(url, data=raw, headers=headers)
            if self.upstream.status == 401 and "api_key" not in credential:
                # An expired OAuth token: refresh once (shared with any concurrent refresh)
                # and retry once; a second 401 is a real auth failure (R-ST-3).
                self.upstream.close()
                fresh = await self.service.refresh_credential(account)
                if fresh.get("access_token") != credential.get("access_token"):
                    headers = anthropic.upstream_headers(self.request.headers, fresh,
                                                         extra_betas=betas)
                self.upstream = await self.service.http.post(url, data=raw, headers=headers)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_unreachable"
            log.warning("upstream %s unreachable: %s", account.name, type(exc).__name__)
            return anthropic_error(GatewayError(
                "upstream_error", f"could not reach the upstream for account {account.name}"
            ), record.request_id)

        upstream = self.upstream
        record.upstream_status = upstream.status
        self.service.observe_headers(account, upstream.headers)
        self.outcome = outcome_for_status(upstream.status)
        if self.outcome == Outcome.FAILURE:
            self.retry_after = retry_after_of(upstream.headers)
            if upstream.status == 429 and route.fable and self.retry_after is None and \
                    not anthropic_quota.account_wide_rejection(upstream.headers):
                # A model-scoped 429: rest only the Fable bucket (R-LANE-7).
                self.outcome = Outcome.FABLE_FAILURE
        headers = _client_headers(upstream, record.request_id)
        if upstream.status == 200 and upstream.content_type == "text/event-stream":
            return await self._stream(upstream, headers)
        return await self._whole(upstream, headers)

    async def _whole(self, upstream: aiohttp.ClientResponse, headers: dict[str, str]
                     ) -> web.Response:
        record = self.record
        try:
            data = await upstream.read()
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_dropped"
            log.warning("upstream body lost: %s", type(exc).__name__)
            return anthropic_error(GatewayError("upstream_error", "upstream connection lost"),
                                   record.request_id)
        if upstream.status == 200:
            record.outcome = "success"
            try:
                usage = json.loads(data).get("usage")
            except (ValueError, AttributeError):
                usage = None
            counted = anthropic.Usage()
            counted.absorb(usage if isinstance(usage, dict) else None)
            self._take_usage(counted)
            if record.operation == "count_tokens":
                record.input_tokens = counted.input_tokens
        else:
            record.outcome = "error"
            record.error_code = anthropic.error_type_of(data) or f"http_{upstream.status}"
        headers.pop("Content-Length", None)
        return web.Response(status=upstream.status, body=data, headers=headers)

    async def _stream(self, upstream: aiohttp.ClientResponse, headers: dict[str, str]
                      ) -> web.StreamResponse:
        record = self.record
        response = web.StreamResponse(status=200, headers=headers)
        response.headers["Cache-Control"] = "no-cache"
        await response.prepare(self.request)
        splitter = SSESplitter()
        watcher = anthropic.StreamReader()
        record.outcome = "incomplete"
        try:
            async for chunk in upstream.content.iter_any():
                for event, data in splitter.feed(chunk):
                    if watcher.feed(event, data) and record.first_token_ms is None:
                        record.first_token_ms = self._ms()
                await response.write(chunk)
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError,
                asyncio.TimeoutError) as exc:
            if isinstance(exc, aiohttp.ClientConnectionResetError) or self._client_gone():
                self.client_gone = True
                return response
            # The upstream dropped mid-stream: tell the client in-band, cool the account.
            self.outcome = Outcome.FAILURE
            record.outcome, record.error_code = "error", "upstream_dropped"
            await _write_quietly(response, _sse_error("api_error", "upstream connection lost"))
            return response
        except ConnectionResetError:
            self.client_gone = True
            return response
        self._take_usage(watcher.usage)
        if watcher.error_type is not None:
            record.outcome, record.error_code = "error", watcher.error_type
            if watcher.error_type in ("overloaded_error", "api_error"):
                self.outcome = Outcome.FAILURE
        elif watcher.stopped:
            record.outcome = "success"
        else:
            self.outcome = Outcome.FAILURE
            record.error_code = "stream_truncated"
        await _write_quietly(response, b"", eof=True)
        return response

    def _take_usage(self, usage: anthropic.Usage) -> None:
        self.record.input_tokens = usage.total_input
        self.record.output_tokens = usage.output_tokens
        self.record.cached_tokens = usage.cache_read if usage.input_tokens is not None else None

    def close(self, exc: BaseException | None) -> None:
        """Runs on every exit path, cancellation included: release once, record once."""
        if self.upstream is not None:
            self.upstream.close()  # a cancelled client cancels the upstream request too
        if self.client_gone or isinstance(exc, (asyncio.CancelledError, ConnectionResetError)):
            self.outcome = Outcome.NEUTRAL
            self.record.outcome, self.record.error_code = "canceled", "client_disconnected"
        elif exc is not None:
            self.outcome = Outcome.FAILURE
            self.record.outcome, self.record.error_code = "error", "gateway_error"
            log.error("relay failed: %s", type(exc).__name__)
        self.lease.release(self.outcome, self.retry_after, self.record.upstream_status)
        self.record.duration_ms = self._ms()
        self.service.record(self.record)


def _sse_error(kind: str, message: str) -> bytes:
    payload = {"type": "error", "error": {"type": kind, "message": message}}
    return f"event: error\ndata: {json.dumps(payload)}\n\n".encode()


async def _write_quietly(response: web.StreamResponse, data: bytes, eof: bool = False) -> None:
    try:
        if eof:
            await response.write_eof()
        else:
            await response.write(data)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        pass
