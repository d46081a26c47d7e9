"""`sublane account disable|enable|verify` (R-AG-6) through the real command, offline and against
a running server whose upstream is the fake Anthropic server."""

from __future__ import annotations

import asyncio
import json
import socket

import anthropic
import pytest

from tests.cli.conftest import Sublane
from tests.cli.test_cli import one_error_line

API_KEY = "sk-ant-api03-work-3c9d"


def add(sublane: Sublane, name: str, secret: dict, *extra: str) -> None:
    sublane.ok(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        name,
        *extra,
        input=json.dumps(secret),
    )


def state(sublane: Sublane, name: str) -> str:
    [match] = [a for a in sublane.accounts() if a["name"] == name]
    return match["state"]


def test_disable_and_enable_without_a_server(sublane: Sublane) -> None:
    add(sublane, "work", {"api_key": API_KEY})
    sublane.ok("account", "disable", "work")
    assert state(sublane, "work") == "disabled"
    sublane.ok("account", "disable", "work")  # twice is still disabled, no error
    sublane.ok("account", "enable", "work")
    assert state(sublane, "work") == "ok"
    assert "nosuch" in one_error_line(sublane.run("account", "disable", "nosuch"))
    offline = sublane.run("account", "verify", "work")
    assert offline.returncode == 1 and "start the server" in one_error_line(offline)


async def test_verify_says_ok_auth_failed_or_unreachable(sublane: Sublane, upstream) -> None:
    sublane.env["SUBLANE_ANTHROPIC_BASE_URL"] = upstream.url
    add(sublane, "work", {"api_key": API_KEY})
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    add(sublane, "gone", {"api_key": "sk-ant-api03-gone"}, "--base-url", dead)
    sublane.serve()

    async def run(*args: str):  # in a thread, so the fake upstream answers meanwhile
        return await asyncio.to_thread(sublane.run, *args)

    ok = await run("account", "verify", "work")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("work: ok")
    upstream.expired.add(API_KEY)
    refused = await run("account", "verify", "work", "--json")
    assert refused.returncode == 1
    verdict = json.loads(refused.stdout)
    assert verdict["result"] == "auth_failed" and "401" in verdict["detail"]
    assert API_KEY not in refused.stdout + refused.stderr
    unreachable = await run("account", "verify", "gone")
    assert unreachable.returncode == 1 and "unreachable" in unreachable.stdout
    # verify reports; it changes nothing
    assert state(sublane, "work") == "ok"


async def test_verify_of_a_subscription_login_asks_its_usage_endpoint(
    sublane: Sublane, upstream
) -> None:
    """R-WF-3: an OAuth token is refused by GET /v1/models; verify asks the usage endpoint
    and rotates nothing."""
    sublane.env["SUBLANE_ANTHROPIC_BASE_URL"] = upstream.url
    sublane.env["SUBLANE_OAUTH_BASE_URL"] = upstream.url
    token = "sk-ant-oat01-sub-5e1f"
    secret = {"access_token": token, "refresh_token": "rt-sub-5e1f", "expires_at": 4_000_000_000}
    add(sublane, "sub", secret)
    upstream.refresh_grants["rt-sub-5e1f"] = ("sk-ant-oat01-rotated", "rt-rotated")
    sublane.serve()
    ok = await asyncio.to_thread(sublane.run, "account", "verify", "sub")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("sub: ok")
    assert token in upstream.usage_reads
    assert upstream.models_reads == [] and upstream.refresh_calls == []
    assert token not in ok.stdout + ok.stderr


async def test_disable_while_serving_gates_requests_and_enable_brings_it_back(
    sublane: Sublane, upstream
) -> None:
    sublane.env["SUBLANE_ANTHROPIC_BASE_URL"] = upstream.url
    add(sublane, "work", {"api_key": API_KEY})
    key = sublane.ok("key", "create", "--name", "k").stdout.split()[0]
    server = sublane.serve()
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key=key, max_retries=0)
    ask = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    await client.messages.create(**ask)
    await asyncio.to_thread(sublane.ok, "account", "disable", "work")
    assert state(sublane, "work") == "disabled"
    with pytest.raises(anthropic.APIStatusError) as refused:
        await client.messages.create(**ask)
    assert "disabled" in str(refused.value)
    served = len(upstream.seen)
    await asyncio.to_thread(sublane.ok, "account", "enable", "work")
    await client.messages.create(**ask)
    assert len(upstream.seen) == served + 1
