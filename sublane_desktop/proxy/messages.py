"""POST /v1/messages and /v1/messages/count_tokens.

Claude models are relayed untouched to an Anthropic account; Codex models are translated to
Responses and streamed back as Anthropic SSE, so Claude Code can drive GPT models (R-PX-6).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from aiohttp import web

from sublane_desktop.core import json_text
from sublane_desktop.core.affinity import conversation_digest, conversation_key
from sublane_desktop.core.clients import is_claude_code
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.json_edit import replace_top_level_string
from sublane_desktop.core.routing import route_model
from sublane_desktop.core.translate.anthropic import (
    AnthropicReader,
    prompt_from_messages,
    strip_foreign_thinking,
)
from sublane_desktop.core.translate.events import GEMINI_TAG, OPENAI_TAG
from sublane_desktop.core.translate.prompt import TranslationError
from sublane_desktop.providers import anthropic
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import anthropic_error
from sublane_desktop.proxy.intake import authenticate, json_body, media_type
from sublane_desktop.proxy.relay import (
    Attempt,
    PassThrough,
    anthropic_builder,
    named_frame,
    outcome_for_status,
    passback_headers,
    retry_after_of,
    serve,
    start_stream,
)
from sublane_desktop.proxy.translated import refuse_unservable, relay_translated, upstream_body

# A conversation that was on a GPT or Gemini model before carries their signature tags.
_OPENAI_TAG_BYTES = OPENAI_TAG.encode()
_GEMINI_TAG_BYTES = GEMINI_TAG.encode()
# (`find`, not `in`: bytes' `in` first tries the operand as an integer and builds and drops
# a TypeError on every request, CPython 3.11.)

__all__ = ["MessagesRoute", "outcome_for_status", "retry_after_of"]


def with_model(raw: bytes, body: dict[str, Any], model: str) -> bytes:
    """The request bytes naming `model`: only the top-level model value's bytes change. A
    body that cannot be edited in place (not UTF-8, say) is written anew rather than sent
    with the wrong name."""
    try:
        return replace_top_level_string(raw, "model", model)
    except ValueError:
        return json.dumps(dict(body, model=model)).encode()


def anthropic_fail_frame(message: str, code: str = "upstream_error") -> bytes:
    return named_frame(
        {"type": "error", "error": {"type": "api_error", "code": code, "message": message}}
    )


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
            return anthropic_error(
                GatewayError(
                    "unknown_model", f"unknown model {str(body.get('model'))[:80]!r}", param="model"
                )
            )
        if self.operation == "count_tokens":
            route = replace(route, spill=())  # only Anthropic counts tokens: never spill
        if route.provider != "anthropic" and self.operation == "count_tokens":
            return anthropic_error(
                GatewayError(
                    "invalid_request",
                    "token counting is only available for Claude models",
                    param="model",
                )
            )
        try:
            refuse_unservable(route)
        except GatewayError as err:
            return anthropic_error(err)
        key = conversation_key(request.headers, body) if self.operation == "messages" else None
        attempt = Attempt(
            service,
            identity,
            route,
            protocol="anthropic",
            operation=self.operation,
            transport=request.transport,
            body=body,
            raw=raw,
            claude_code=is_claude_code(request.headers),
        )
        if route.provider == "anthropic":
            return await serve(
                attempt,
                key,
                lambda a: self._native_or_spilled(request, a, body, raw, key),
                anthropic_error,
            )
        try:
            prompt = prompt_from_messages(body, route.upstream_model)
            if prompt.cache_key is None and key:
                prompt.cache_key = conversation_digest(key, route.provider)
            upstream = upstream_body(prompt, route.provider)
        except TranslationError as exc:
            return anthropic_error(GatewayError("invalid_request", str(exc)))
        return await serve(
            attempt,
            key,
            lambda a: relay_translated(
                request, a, prompt, upstream, "anthropic", str(body.get("model"))
            ),
            anthropic_error,
        )

    async def _native_or_spilled(
        self,
        request: web.Request,
        attempt: Attempt,
        body: dict[str, Any],
        raw: bytes,
        key: str | None,
    ) -> web.StreamResponse:
        """A Claude request admitted on an Anthropic account goes through untouched; one that
        spilled to an Antigravity account (R-AG-3) is translated like any foreign route."""
        if attempt.route.provider == "anthropic":
            return await self._native(request, attempt, body, raw)
        try:
            prompt = prompt_from_messages(body, attempt.route.upstream_model)
            if prompt.cache_key is None and key:
                prompt.cache_key = conversation_digest(key, attempt.route.provider)
        except TranslationError as exc:
            attempt.record.outcome, attempt.record.error_code = "error", "invalid_request"
            raise GatewayError("invalid_request", str(exc)) from None
        return await relay_translated(
            request, attempt, prompt, {}, "anthropic", str(body.get("model"))
        )

    async def _native(
        self, request: web.Request, attempt: Attempt, body: dict[str, Any], raw: bytes
    ) -> web.StreamResponse:
        """The client's request as it sent it (R-WF-1): its headers but the credential
        (`anthropic.relayed_headers`), its path and query, its body bytes. Where the model name
        must change (a provider prefix, the `[1m]` suffix) only that value's bytes change. The
        one re-serialised body is a conversation that was on a GPT or Gemini model: their
        thinking blocks would be refused, so they are taken out and the body written anew."""
        route = attempt.route
        if raw.find(_OPENAI_TAG_BYTES) >= 0 or raw.find(_GEMINI_TAG_BYTES) >= 0:
            stripped = strip_foreign_thinking(body)
            if stripped is not None:
                raw = json.dumps(dict(stripped, model=route.upstream_model)).encode()
                body = stripped
        if route.upstream_model != body.get("model"):
            raw = with_model(raw, body, route.upstream_model)
        path = "/v1/messages" if self.operation == "messages" else "/v1/messages/count_tokens"
        upstream = await attempt.open(
            anthropic_builder(
                attempt.service,
                attempt.account,
                request.headers,
                route,
                raw,
                path,
                request.query_string,
                relayed=True,
            )
        )
        headers = passback_headers(attempt, "anthropic")
        if upstream.status == 200 and media_type(upstream) == "text/event-stream":
            response = await start_stream(request, headers)
            await attempt.pump(
                AnthropicReader(), PassThrough(attempt, response, anthropic_fail_frame)
            )
            return response
        data = await attempt.read_whole()
        if upstream.status == 200:
            attempt.record.outcome = "success"
            try:
                usage = json_text.load(data).get("usage")
            except (ValueError, AttributeError):
                usage = None
            counted = anthropic.Usage()
            counted.absorb(usage if isinstance(usage, dict) else None)
            known = counted.input_tokens is not None
            attempt.take_counts(
                counted.total_input,
                counted.output_tokens,
                counted.cache_read if known else None,
                counted.cache_creation if known else None,
            )
            if self.operation == "count_tokens":
                attempt.record.input_tokens = counted.input_tokens
        else:
            attempt.note_error(data)
        headers.pop("Content-Length", None)
        return web.Response(status=upstream.status, body=data, headers=headers)
