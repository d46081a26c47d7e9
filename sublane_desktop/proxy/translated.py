"""A client protocol served by an upstream that speaks another one (R-PX-6, R-AG-2).

Chat Completions to any upstream, Anthropic Messages to a Codex or Gemini model, Responses to a
Claude or Gemini model: the request is rendered for the upstream before admission (a request
that cannot be translated is a 400 without a record), the upstream is streamed (Antigravity
answers a client that did not ask to stream with one whole `generateContent`), and its events
are rendered back as the client's stream or folded into the client's whole answer.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from aiohttp import web

from sublane_desktop.core.errors import WAIT_STATUSES, GatewayError
from sublane_desktop.core.translate import anthropic as an
from sublane_desktop.core.translate import chat
from sublane_desktop.core.translate import gemini as gm
from sublane_desktop.core.translate import responses as rs
from sublane_desktop.core.translate.events import Transcript
from sublane_desktop.core.translate.prompt import Prompt, TranslationError
from sublane_desktop.providers import antigravity
from sublane_desktop.proxy.errors import upstream_error
from sublane_desktop.proxy.relay import (
    Attempt,
    Builder,
    Fold,
    Rendered,
    anthropic_builder,
    antigravity_builder,
    codex_builder,
    data_frame,
    named_frame,
    start_stream,
)


def refuse_unservable(route: Any) -> None:
    """A model its provider's accounts cannot serve is a 400 before admission (no record)."""
    if route.provider == "antigravity" and not antigravity.serves(route.upstream_model):
        raise GatewayError(
            "unknown_model",
            f"antigravity accounts serve gemini-* and claude-*"
            f" models, not {route.upstream_model[:80]!r}",
            param="model",
        )


def upstream_body(prompt: Prompt, provider: str) -> dict[str, Any]:
    """The upstream request for a Prompt (raises TranslationError for what cannot cross)."""
    if provider == "anthropic":
        return an.messages_request(prompt)
    if provider == "antigravity":
        return gm.gemini_request(prompt)
    return rs.responses_request(prompt)


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def translated_call(
    service: Any,
    account: Any,
    headers: Any,
    route: Any,
    body: dict[str, Any],
    *,
    stream: bool = True,
) -> tuple[Builder, Any]:
    """(upstream request builder, stream reader) for a translated request body."""
    if route.provider == "anthropic":
        return anthropic_builder(
            service,
            account,
            headers,
            route,
            json.dumps(dict(body, model=route.upstream_model)).encode(),
        ), an.AnthropicReader()
    if route.provider == "antigravity":
        return (
            antigravity_builder(service, account, route, body, stream=stream),
            gm.GeminiReader(new_id("call_")),
        )
    return codex_builder(service, account, headers, route, body), rs.ResponsesReader()


def renderer_for(client: str, model: str, created: int, prompt: Prompt) -> tuple[Any, Any]:
    """(renderer, SSE framing) for a client protocol."""
    if client == "chat":
        return chat.ChatRenderer(
            model, new_id("chatcmpl-"), created, prompt.include_usage
        ), data_frame
    if client == "anthropic":
        return an.AnthropicRenderer(model, new_id("msg_")), named_frame
    return rs.ResponsesRenderer(model, new_id("resp_"), created), named_frame


def whole_answer(client: str, transcript: Transcript, model: str, created: int) -> dict[str, Any]:
    if client == "chat":
        return chat.chat_completion(transcript, model, new_id("chatcmpl-"), created)
    if client == "anthropic":
        return an.anthropic_message(transcript, model, new_id("msg_"))
    return rs.responses_object(transcript, model, new_id("resp_"), created)


async def relay_translated(
    request: web.Request,
    attempt: Attempt,
    prompt: Prompt,
    body: dict[str, Any],
    client: str,
    model: str,
) -> web.StreamResponse:
    """`client` is chat | anthropic | responses; `model` the name the client asked for."""
    service, route = attempt.service, attempt.route
    if attempt.spilled_from is not None:  # the body was made for the provider asked for
        try:
            body = upstream_body(prompt, route.provider)
        except TranslationError as exc:
            attempt.record.outcome, attempt.record.error_code = "error", "invalid_request"
            raise GatewayError("invalid_request", str(exc)) from None
    whole = route.provider == "antigravity" and not prompt.stream
    build, reader = translated_call(
        service, attempt.account, request.headers, route, body, stream=not whole
    )
    upstream = await attempt.open(build)
    if upstream.status != 200:
        data = await attempt.read_whole()
        kind, message = attempt.note_error(data)
        wait = attempt.client_wait() if upstream.status in WAIT_STATUSES else None
        return upstream_error(client, upstream.status, kind, message, attempt.request_id, wait)
    created = int(service.clock.now())
    if prompt.stream:
        renderer, frame = renderer_for(client, model, created, prompt)
        response = await start_stream(request, {"X-Request-ID": attempt.request_id})
        await attempt.pump(reader, Rendered(attempt, response, renderer, frame))
        return response
    fold = Fold(Transcript())
    if whole:
        data = await attempt.read_whole()
        events = reader.feed_whole(data)
        tally = attempt.take_whole(events)
        await fold.take(b"", [("", events, None)])
        await fold.end(tally)
    else:
        await attempt.pump(reader, fold)
    end = fold.transcript.finished
    if fold.failure is not None or end is None or end.status == "failed":
        message = fold.failure or (end.message if end else None) or "upstream error"
        kind = fold.code or (
            end.error_type if end is not None and end.error_type else "upstream_error"
        )
        status = 504 if kind == "upstream_timeout" else 502
        return upstream_error(client, status, kind, message, attempt.request_id)
    return web.json_response(
        whole_answer(client, fold.transcript, model, created),
        headers={"X-Request-ID": attempt.request_id},
    )
