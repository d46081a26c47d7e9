"""GET /v1/models: the models the caller's group can reach (model discovery: no record).

Listed per provider that has an enabled account in the caller's group, as the upstreams
themselves report it (asked at most every ten minutes, a metadata operation; the static menu
when an upstream cannot say: `core.catalog`, R-AG-5). Routing accepts any name of a served
family (R-PX-4); this is only what to offer. The body carries both list shapes, OpenAI's
(`object`, `owned_by`) and Anthropic's (`type`, `display_name`, `has_more`), so either SDK's
`models.list()` reads it.
"""

from __future__ import annotations

from aiohttp import web

from sublane_desktop.core.errors import GatewayError
from sublane_desktop.proxy import SERVICE
from sublane_desktop.proxy.errors import openai_error
from sublane_desktop.proxy.intake import authenticate

RELEASED = "2025-01-01T00:00:00Z"  # upstream lists carry no common date; clients need one


async def list_models(request: web.Request) -> web.Response:
    service = request.app[SERVICE]
    try:
        identity = await authenticate(request)
    except GatewayError as err:
        return openai_error(err)
    listed = await service.discovery.models_for_group(identity.group_id)
    data = [
        {
            "id": model,
            "object": "model",
            "created": 0,
            "owned_by": owner,
            "type": "model",
            "display_name": model,
            "created_at": RELEASED,
        }
        for model, owner in listed
    ]
    return web.json_response(
        {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    )
