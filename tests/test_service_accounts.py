"""Accounts through the service (what the Add-account dialog and Remove call)."""

import json

import anthropic
import pytest

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.secrets import account_secret
from tests.fake_upstream import CLAUDE_CODE_HEADERS

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


async def test_add_import_and_remove(harness, tmp_path):
    s = harness.service
    view = await s.add_account(
        "anthropic", "pasted", {"api_key": "sk-ant-api-1"}, max_concurrency=3
    )
    assert view["name"] == "pasted" and view["max_concurrency"] == 3
    with pytest.raises(CredentialError):
        await s.add_account("anthropic", "bad", {"access_token": "x"})
    with pytest.raises(CredentialError):
        await s.add_account("nope", "bad", {"api_key": "k"})
    assert [a["name"] for a in s.accounts_runtime()["accounts"]] == ["pasted"]

    login = tmp_path / "creds.json"
    login.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": "sk-ant-oat01-cc",
                    "refreshToken": "rt",
                    "expiresAt": 4_000_000_000_000,
                }
            }
        )
    )
    imported = await s.import_login("claude-code", login)
    assert imported["name"] == "claude-code"

    key = await harness.create_key()
    client = anthropic.AsyncAnthropic(
        base_url=harness.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    await client.messages.create(**BODY)

    await s.remove_account("pasted")
    assert [a["name"] for a in s.accounts_runtime()["accounts"]] == ["claude-code"]
    assert await s.secrets.aget(account_secret(view["id"])) is None
    await client.messages.create(**BODY)
    assert harness.upstream.tokens_served()[-1] == "sk-ant-oat01-cc"


async def test_cost_aware_reads_the_turns_the_relay_settles(harness):
    """The scheduler's conversation memory is the service's: what the relay settles for the
    cache-miss rule is what cost_aware weighs a move with (R-SIM-4, R-CF-1)."""
    s = harness.service
    await s.update_settings({"scheduler.mode": "cost_aware"})
    await s.add_account("anthropic", "a1", {"api_key": "sk-ant-api-1"})
    key = await harness.create_key()
    client = anthropic.AsyncAnthropic(
        base_url=harness.url,
        api_key=key,
        max_retries=0,
        default_headers={"x-claude-code-session-id": "sess-1"},
    )
    await client.messages.create(**BODY)
    await s.flush_records()
    assert s.pool.scheduler.mode == "cost_aware"
    assert s.pool.scheduler.conversations is s.turns
    [(group, digest)] = list(s.pool.bindings)
    facts = s.pool.scheduler.conversations.previous(group, digest)
    assert facts is not None and facts.account_id == s.pool.bindings[(group, digest)]
