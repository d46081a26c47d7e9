"""R-LOGIN-2 with the real Codex CLI 0.171.0: an imported ChatGPT login and Codex itself share
one refresh-token family and neither ever uses a spent token.

SubLane refreshes first and writes auth.json back; then the real `codex exec`, its access token
refused, reloads auth.json, refreshes with the token SubLane wrote (through
CODEX_REFRESH_TOKEN_URL_OVERRIDE, at the strict fake whose refresh tokens are single-use) and
writes the file itself; then SubLane reads what Codex wrote and carries on from it. Codex
parsing the file SubLane wrote is the proof that the write-back keeps Codex's own format.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from sublane_desktop.core.clock import FakeClock
from tests.conftest import started_harness
from tests.fake_codex import FakeCodex
from tests.openai_helpers import oai
from tests.real_cli import cli_path, quiet_env, run_cli
from tests.real_cli.test_codex_cli_fidelity import _jwt, provider_config

RUN_TIMEOUT = 25.0
DAY = 86400


def chatgpt_tokens(n: int, exp: float, account_id: str) -> tuple[str, str]:
    claims = {"chatgpt_account_id": account_id, "chatgpt_plan_type": "plus"}
    return _jwt({"exp": int(exp), "n": n, "https://api.openai.com/auth": claims}), f"rt-{n}"


async def test_sublane_and_the_real_codex_take_turns_on_one_login(
    tmp_path: Path, upstream, codex_upstream: FakeCodex, secret_store, monkeypatch
) -> None:
    codex = cli_path("codex")
    fake = codex_upstream
    clock = FakeClock()
    home, workdir = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    workdir.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    account = "acct-family"
    fake.account_id = account
    far = clock.now() + 10 * DAY
    for n in range(6):
        fake.refresh_grants[f"rt-{n}"] = chatgpt_tokens(n + 1, far + n, account)
    # the token SubLane's refresh gets has, by its JWT, expired in real time: Codex (which
    # reads the JWT's exp) refreshes before using it, SubLane (expires_in) does not care
    fake.refresh_grants["rt-0"] = chatgpt_tokens(1, time.time() - 60, account)
    access, _ = chatgpt_tokens(0, clock.now() - 60, account)  # already expired for SubLane
    (home / "auth.json").write_text(
        json.dumps(
            {
                "OPENAI_API_KEY": None,
                "tokens": {
                    "id_token": _jwt(
                        {
                            "email": "me@example.com",
                            "https://api.openai.com/auth": {
                                "chatgpt_account_id": account,
                                "chatgpt_plan_type": "plus",
                            },
                        }
                    ),
                    "access_token": access,
                    "refresh_token": "rt-0",
                    "account_id": account,
                },
                "last_refresh": "2026-12-01T10:00:00Z",
            }
        )
    )
    async with started_harness(tmp_path, secret_store, upstream, codex=fake, clock=clock) as h:
        h.service.env.update({"CODEX_HOME": str(home), "SUBLANE_OAUTH_BASE_URL": fake.url})
        await h.service.import_login("codex")
        key = await h.create_key()
        fake.usage_for["*"] = 429

        # 1. SubLane refreshes first and writes the new tokens back
        client = oai(h, key)
        await client.responses.create(model="gpt-5.4", input="hi")
        await client.close()
        at1 = fake.refresh_grants["rt-0"][0]
        assert fake.tokens_served()[-1] == at1
        written = json.loads((home / "auth.json").read_text())
        assert (written["tokens"]["access_token"], written["tokens"]["refresh_token"]) == (
            at1,
            "rt-1",
        )

        # 2. the real Codex: its access token has expired, so it refreshes with what SubLane wrote
        env = quiet_env(tmp_path / "user-home")
        env["CODEX_HOME"] = str(home)
        env["CODEX_REFRESH_TOKEN_URL_OVERRIDE"] = fake.url + "/oauth/token"
        (home / "config.toml").write_text(
            provider_config("direct", fake.url, "requires_openai_auth = true\n")
        )
        out, _ = await run_cli(
            [codex, "exec", "--skip-git-repo-check", "say hi"],
            cwd=workdir,
            env=env,
            timeout=RUN_TIMEOUT,
        )
        assert b"Hello from the fake Codex upstream." in out
        assert [c["refresh_token"] for c in fake.refresh_calls] == ["rt-0", "rt-1"]
        by_codex = json.loads((home / "auth.json").read_text())
        assert by_codex["tokens"]["refresh_token"] == "rt-2"

        # 3. SubLane, its token now old, takes up what Codex wrote
        clock.advance(11 * DAY)
        client = oai(h, key)
        await client.responses.create(model="gpt-5.4", input="hi again")
        await client.close()
        assert json.loads((home / "auth.json").read_text())["tokens"]["refresh_token"] == "rt-3"
        used = Counter(c["refresh_token"] for c in fake.refresh_calls)
        assert [t for t, n in used.items() if n > 1] == []  # no side ever used a spent token
        assert h.service.account_view(1)["state"] == "ok"


@pytest.fixture(autouse=True)
def _needs_the_cli() -> None:
    cli_path("codex")
