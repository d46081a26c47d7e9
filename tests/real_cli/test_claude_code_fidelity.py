"""The real Claude Code CLI, once straight at the fake Anthropic upstream and once through
SubLane: the upstream must receive the same request both times (SPEC R-WF-1), apart from the
credential and what Claude Code makes anew per run.

Claude Code 2.1.197's request is the real thing: `POST /v1/messages?beta=true`, eight betas,
thinking, tools and a body of about 76 kB. The fake refuses what Anthropic refuses (an OAuth
token without the oauth beta, no `anthropic-version`, a body that is not JSON), so a run that
passes is one the real API would have read. Each run takes about a second.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import aiohttp
import pytest

from sublane_desktop.providers import anthropic
from tests.real_cli import cli_path, quiet_env, run_cli

RUN_TIMEOUT = 30.0  # one `claude -p` against a loopback fake takes about a second
ANSWER = "Hello from the fake upstream."
ACCOUNT_KEY = "sk-ant-api03-account-9b1e"
ACCOUNT_TOKEN = "sk-ant-oat01-account-4c7d"
DIRECT_KEY = "sk-ant-api03-direct-2a6f"

# Headers the comparison leaves out, each for its reason:
# - Host and Content-Length: each connection's own (the body is compared byte for byte);
# - Connection: hop-by-hop; Claude Code's keep-alive is about its connection to SubLane (the
#   relay keeps its own upstream connection alive without saying so);
# - x-api-key / Authorization: the credential, which SubLane replaces with the account's
#   (checked on its own below);
# - X-Claude-Code-Session-Id: Claude Code starts a new session per run (its value is checked
#   to be the one that run sent, and masked in the body where metadata.user_id repeats it).
NOT_COMPARED = {"host", "content-length", "connection", "x-api-key", "authorization"}
SESSION = "x-claude-code-session-id"
# The date in the system reminder: two runs either side of midnight differ there.
DATE = re.compile(rb"Today's date is \d{4}-\d{2}-\d{2}")
# metadata.user_id's device_id: a random id Claude Code makes for a new HOME (each run has one).
DEVICE = re.compile(rb'\\"device_id\\":\\"[0-9a-f]+\\"')


async def claude(
    base_url: str, key: str, home: Path, cwd: Path, *args: str, key_env: str = "ANTHROPIC_API_KEY"
) -> None:
    """One `claude -p`; HOME starts empty each time, at the same path, so nothing in the
    request differs by where or how often Claude Code has run before."""
    shutil.rmtree(home, ignore_errors=True)
    env = quiet_env(home)
    env.update({"ANTHROPIC_BASE_URL": base_url, key_env: key})
    argv = [cli_path("claude"), "-p", "say hi", *args]
    out, _ = await run_cli(argv, cwd=cwd, env=env, timeout=RUN_TIMEOUT)
    assert ANSWER in out.decode(errors="replace")


def session_of(seen) -> str:
    [session] = [v for k, v in seen.raw_headers if k.lower() == SESSION]
    return session


def compared_headers(seen) -> list[tuple[str, str]]:
    session = session_of(seen)
    return [
        (name, "<session>" if value == session else value)
        for name, value in seen.raw_headers
        if name.lower() not in NOT_COMPARED
    ]


def compared_body(seen) -> bytes:
    body = seen.raw.replace(session_of(seen).encode(), b"<session>")
    return DEVICE.sub(b"<device>", DATE.sub(b"<date>", body))


@pytest.mark.parametrize(
    ("kind", "model", "key_env"),
    [
        ("api_key", None, "ANTHROPIC_API_KEY"),
        ("oauth", None, "ANTHROPIC_API_KEY"),
        # as the README sets Claude Code up: the SubLane key as a Bearer token
        ("oauth", None, "ANTHROPIC_AUTH_TOKEN"),
        ("oauth", "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),  # a prefix SubLane drops
    ],
)
async def test_claude_code_reaches_the_upstream_through_sublane_as_it_sent_it(
    harness, tmp_path, kind, model, key_env
):
    h = harness
    upstream = h.upstream
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    args = ("--model", model) if model else ()

    await claude(upstream.url, DIRECT_KEY, home, work, *args)
    direct = [s for s in upstream.seen if s.method == "POST"]
    # Claude Code opens the connection with a HEAD of its base URL and ignores the answer
    # (its bundle: `fetch(ANTHROPIC_BASE_URL, {method: "HEAD"}).catch(() => {})`).
    assert ("HEAD", "/") in upstream.requests
    upstream.seen.clear()
    upstream.requests.clear()

    if kind == "api_key":
        await h.add_account("plain", ACCOUNT_KEY, api_key=True)
    else:
        await h.add_account("sub", ACCOUNT_TOKEN)
    key = await h.create_key()
    await claude(h.url, key, home, work, *args, key_env=key_env)
    relayed = [s for s in upstream.seen if s.method == "POST"]
    # SubLane answers the HEAD itself (404 in its error shape, at once): nothing to relay.
    assert ("HEAD", "/") not in upstream.requests

    assert len(relayed) == len(direct) >= 1
    for sent, got in zip(direct, relayed, strict=True):
        assert (got.method, got.path, got.query) == (sent.method, sent.path, sent.query)
        assert got.query == "beta=true"
        expected = compared_headers(sent)
        if kind == "oauth":  # the one header SubLane adds to: the beta an OAuth token needs
            expected = [
                (n, f"{v},{anthropic.OAUTH_BETA}" if n.lower() == "anthropic-beta" else v)
                for n, v in expected
            ]
        assert compared_headers(got) == expected
        credential = {k.lower(): v for k, v in got.raw_headers if k.lower() in NOT_COMPARED}
        if kind == "oauth":
            assert credential["authorization"] == f"Bearer {ACCOUNT_TOKEN}"
            assert "x-api-key" not in credential
        else:
            assert credential["x-api-key"] == ACCOUNT_KEY and "authorization" not in credential
        assert key not in str(got.raw_headers)
        body = compared_body(sent)
        if model:  # only the model value's bytes differ
            body = body.replace(f'"{model}"'.encode(), f'"{model.split("/", 1)[1]}"'.encode())
        assert compared_body(got) == body
        assert len(sent.raw) > 50_000  # the real request, not a stand-in

    await h.service.flush_records()
    assert [r.outcome for r in h.service.records] == ["success"] * len(relayed)
    async with aiohttp.ClientSession() as s, s.head(h.url + "/") as answer:
        assert answer.status == 404
