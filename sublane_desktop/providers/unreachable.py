"""Why a call did not reach an upstream, in the words a person reads (R-UI-16, fault 9).

Every place that catches a network failure says it through `why_unreachable`, never with the
exception's class name: "(ClientConnectorError)" told a person nothing they could act on.
"""

from __future__ import annotations

import ssl

import aiohttp


def why_unreachable(exc: BaseException) -> str:
    """A short reason: "the connection was refused or the network is down", …"""
    # Order matters: the specific aiohttp errors subclass the general ones (and OSError).
    if isinstance(exc, (TimeoutError, aiohttp.ServerTimeoutError)):
        return "it did not answer in time"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "its host name could not be resolved (offline, or a wrong address)"
    if isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)):
        return "its TLS certificate was not accepted"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "the connection was refused or the network is down"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "it closed the connection"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "its answer was cut off"
    if isinstance(exc, ValueError):
        return "its answer was not valid JSON"
    return "the connection failed"
