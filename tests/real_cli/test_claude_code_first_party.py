"""Claude Code's first-party behaviour behind SubLane (SPEC R-WF-8).

Claude Code 2.1.197 treats a base URL as first-party when its host is api.anthropic.com or
`_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL` is set (its own code: `if (env.
_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL) return true; … host in ["api.anthropic.com"]`). Set,
its system prompt's billing block carries a `cch=` hash of the request and it turns on tool
search (the `advanced-tool-use` beta, a smaller first request). `sublane env` and "Set up a
tool" set it, because behind SubLane the claim is true where it matters: a Claude Code request
on an Anthropic account reaches api.anthropic.com with its body bytes unchanged (R-WF-1), so the
hash it carries still describes the request.
"""

from __future__ import annotations

import re
import shutil

from sublane_desktop.client_env import FIRST_PARTY, client_variables
from tests.real_cli import cli_path, quiet_env, run_cli
from tests.real_cli.test_claude_code_fidelity import (
    ANSWER,
    DIRECT_KEY,
    RUN_TIMEOUT,
    compared_body,
)

CCH = re.compile(rb"cch=[0-9a-f]+;")
TOOL_SEARCH = "advanced-tool-use-2025-11-20"


async def claude(env_extra: dict[str, str], home, cwd) -> None:
    shutil.rmtree(home, ignore_errors=True)
    env = quiet_env(home)
    env.update(env_extra)
    out, _ = await run_cli(
        [cli_path("claude"), "-p", "say hi"], cwd=cwd, env=env, timeout=RUN_TIMEOUT
    )
    assert ANSWER in out.decode(errors="replace")


def posts(upstream):
    return [s for s in upstream.seen if s.method == "POST"]


async def test_sublane_env_keeps_claude_codes_first_party_request_intact(harness, tmp_path):
    h = harness
    upstream = h.upstream
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()

    # Straight at a non-first-party URL: no billing hash, no tool search.
    await claude({"ANTHROPIC_BASE_URL": upstream.url, "ANTHROPIC_API_KEY": DIRECT_KEY}, home, work)
    [plain] = posts(upstream)
    assert not CCH.search(plain.raw) and TOOL_SEARCH not in plain.headers["anthropic-beta"]
    upstream.seen.clear()

    # Straight, with the variable: the first-party request.
    first_party = {"ANTHROPIC_BASE_URL": upstream.url, "ANTHROPIC_API_KEY": DIRECT_KEY}
    await claude({**first_party, **FIRST_PARTY}, home, work)
    [direct] = posts(upstream)
    assert CCH.search(direct.raw) and TOOL_SEARCH in direct.headers["anthropic-beta"]
    upstream.seen.clear()

    # Through SubLane with exactly what `sublane env` prints: the same request, hash included.
    await h.add_account("sub", "sk-ant-oat01-account-4c7d")
    variables = client_variables(h.url, await h.create_key())
    assert variables["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"] == "1"
    await claude(variables, home, work)
    [relayed] = posts(upstream)
    assert CCH.search(relayed.raw) and TOOL_SEARCH in relayed.headers["anthropic-beta"]
    # The hash covers the run's own session; with it masked the bytes are the same.
    assert CCH.sub(b"cch=<hash>;", compared_body(relayed)) == CCH.sub(
        b"cch=<hash>;", compared_body(direct)
    )
