"""R-UI-14 through the real command against a running `sublane serve`: `account add` and
`account enable` have the account's quota read at once, with no request sent through it, for
Claude, Codex and Antigravity logins (the fakes count their usage reads). What the server does
is tested in-process in tests/test_fresh_gauges.py; here, that the CLI's ways in reach it."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.cli.conftest import Sublane
from tests.provider_logins import PROVIDERS, ProviderLogin

WAIT_S = 20.0  # a bound for a failing run; a passing one is done in well under a second


class Login(ProviderLogin):
    def point(self, sublane: Sublane) -> None:
        sublane.env["SUBLANE_ANTHROPIC_BASE_URL"] = self.upstream.url
        sublane.env["SUBLANE_OAUTH_BASE_URL"] = self.upstream.url
        sublane.env["SUBLANE_CODEX_BASE_URL"] = self.codex.url
        sublane.env["SUBLANE_ANTIGRAVITY_BASE_URL"] = self.google.url
        sublane.env["SUBLANE_GOOGLE_OAUTH_BASE_URL"] = self.google.url

    async def read_by(self, name: str) -> None:
        if self.provider == "codex":
            wait = self.codex.usage_read_by(self.token(name))
        elif self.provider == "antigravity":
            wait = self.google.quota_read_by(self.token(name))
        else:
            wait = self.upstream.usage_read_by(self.token(name))
        await asyncio.wait_for(wait, WAIT_S)

    def no_model_traffic(self) -> bool:
        return not self.upstream.seen and not self.codex.seen and not self.google.seen


@pytest.fixture(params=PROVIDERS)
def login(request, upstream, codex_upstream, antigravity_upstream) -> Login:
    return Login(request.param, upstream, codex_upstream, antigravity_upstream)


async def run(sublane: Sublane, *args: str, input: str | None = None) -> None:
    """One CLI call in a thread, so the fakes on this loop answer the server meanwhile."""
    done = await asyncio.to_thread(sublane.run, *args, input=input)
    assert done.returncode == 0, done.stderr


async def test_account_add_while_serving_reads_the_quota_at_once(
    sublane: Sublane, login: Login
) -> None:
    login.point(sublane)
    sublane.serve()
    await run(
        sublane,
        "account",
        "add",
        "--provider",
        login.provider,
        "--name",
        "work",
        input=json.dumps(login.secret("work")),
    )
    await login.read_by("work")  # the server's read, not a request's
    assert login.reads() == [login.token("work")]
    assert login.no_model_traffic()


async def test_account_enable_while_serving_reads_the_quota_at_once(
    sublane: Sublane, login: Login
) -> None:
    login.point(sublane)
    secret = json.dumps(login.secret("work"))
    await run(
        sublane, "account", "add", "--provider", login.provider, "--name", "work", input=secret
    )
    await run(sublane, "account", "disable", "work")
    sublane.serve()  # a disabled account: nothing to read at the start
    await run(sublane, "account", "enable", "work")
    await login.read_by("work")
    assert login.reads() == [login.token("work")]
    assert login.no_model_traffic()
