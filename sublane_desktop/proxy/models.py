"""GET /v1/models: the models the caller's group can reach (model discovery: no record).

A static menu per provider, listed when the caller's group has an enabled account of that
provider. Routing accepts any name of a served family (R-PX-4); this is only what to offer.
The body carries both list shapes, OpenAI's (`object`, `owned_by`) and Anthropic's
(`type`, `display_name`, `has_more`), so either SDK's `models.list()` reads it.
"""

from __future__ import annotations

from aiohttp import web

from sublane_desktop.proxy import SERVICE

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.providers import codex
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import authenticate

ANTHROPIC_MODELS = ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5",
                    "claude-opus-4-1", "claude-fable-5")
MENU = {"anthropic": (ANTHROPIC_MODELS, "anthropic"), "codex": (codex.MODELS, "openai")}
RELEASED = "2025-01-01T00:00:00Z"  # the menu is static; clients only need a valid date


async def list_models(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    try:
        identity = await authenticate(request)
    except GatewayError as err:
        return openai_error(err)
    providers = {a.provider for a in service.pool.accounts.values()
                 if identity.group_id in a.group_ids and a.enabled}
    data = [{"id": model, "object": "model", "created": 0, "owned_by": owner,
             "type": "model", "display_name": model, "created_at": RELEASED}
            for provider, (models, owner) in MENU.items() if provider in providers
            for model in models]
    return web.json_response({
        "object": "list", "data": data, "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    })
