"""aiohttp server: client-facing /v1/*, management /api/* and /llmux/*, streaming relay."""

from typing import Any

from aiohttp import web

SERVICE: web.AppKey[Any] = web.AppKey("service", object)
