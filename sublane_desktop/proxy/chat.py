"""POST /v1/chat/completions: any OpenAI-compatible tool on any pool (R-PX-6).

No upstream speaks Chat Completions, so every request is translated: to Anthropic Messages for
Claude models, to Responses for Codex models, and the answer back (streaming included).
"""

from __future__ import annotations

from aiohttp import web

from sublane_desktop.core.affinity import conversation_digest, conversation_key
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.routing import route_model
from sublane_desktop.core.translate.chat import prompt_from_chat
from sublane_desktop.core.translate.prompt import TranslationError
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import authenticate, json_body
from sublane_desktop.proxy.relay import Attempt, serve
from sublane_desktop.proxy.translated import refuse_unservable, relay_translated, upstream_body


class ChatRoute:
    async def handle(self, request: web.Request) -> web.StreamResponse:
        service = request.app[SERVICE]
        try:
            identity = await authenticate(request)
            body, _ = await json_body(request)
            model = body.get("model")
            route = route_model(model)
            if route is None:
                raise GatewayError(
                    "unknown_model", f"unknown model {str(model)[:80]!r}", param="model"
                )
            refuse_unservable(route)
            key = conversation_key(request.headers, body)
            try:
                prompt = prompt_from_chat(body, route.upstream_model)
                if prompt.cache_key is None and key and route.provider != "anthropic":
                    prompt.cache_key = conversation_digest(key, route.provider)
                upstream = upstream_body(prompt, route.provider)
            except TranslationError as exc:
                raise GatewayError("invalid_request", str(exc)) from None
        except GatewayError as err:
            return openai_error(err)
        attempt = Attempt(
            service,
            identity,
            route,
            protocol="openai-chat",
            operation="chat",
            transport=request.transport,
            body=body,
        )
        return await serve(
            attempt,
            key,
            lambda a: relay_translated(request, a, prompt, upstream, "chat", str(model)),
            openai_error,
        )
