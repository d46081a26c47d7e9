"""Why a call did not reach an upstream, in words a person can act on (R-UI-16, fault 9): each
kind of network failure aiohttp raises has its own sentence, the specific ones before the
general ones they subclass, and never the exception's class name."""

from __future__ import annotations

import socket
import ssl

import aiohttp
import pytest

from sublane_desktop.providers.unreachable import why_unreachable

REFUSED = ConnectionRefusedError(111, "Connection refused")


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (TimeoutError(), "it did not answer in time"),
        (aiohttp.ServerTimeoutError("read"), "it did not answer in time"),
        (
            aiohttp.ClientConnectorDNSError(None, socket.gaierror(-2, "Name not known")),  # type: ignore[arg-type]
            "its host name could not be resolved (offline, or a wrong address)",
        ),
        (
            aiohttp.ClientConnectorCertificateError(None, ssl.SSLCertVerificationError()),  # type: ignore[arg-type]
            "its TLS certificate was not accepted",
        ),
        (ssl.SSLError(1, "wrong version number"), "its TLS certificate was not accepted"),
        (
            aiohttp.ClientConnectorError(None, REFUSED),  # type: ignore[arg-type]
            "the connection was refused or the network is down",
        ),
        (aiohttp.ServerDisconnectedError(), "it closed the connection"),
        (aiohttp.ClientPayloadError("cut"), "its answer was cut off"),
        (ValueError("Expecting value"), "its answer was not valid JSON"),
        (aiohttp.ClientResponseError(None, (), status=500), "the connection failed"),  # type: ignore[arg-type]
        (OSError("no route"), "the connection failed"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else "",
)
def test_each_network_failure_has_its_own_words(exc, words):
    assert why_unreachable(exc) == words


async def test_a_port_nobody_listens_on_reads_as_refused():
    with socket.socket() as probe:  # a free port, closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError) as failed:
            await session.get(f"http://127.0.0.1:{port}/")
    assert why_unreachable(failed.value) == "the connection was refused or the network is down"
