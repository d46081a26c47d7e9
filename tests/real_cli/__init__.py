"""The real Claude Code and Codex CLIs, for the wire-fidelity tests (SPEC R-WF-1).

`.ci/run` installs them from npm into `.clis/` (pinned versions, see `CLI_PACKAGES`); a test that
needs one and cannot find it skips and says how to install it. `SUBLANE_TEST_CLAUDE` and
`SUBLANE_TEST_CODEX` point at other binaries.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".clis" / "node_modules" / ".bin"
# Pinned so a new release changes what the fidelity tests see only when we bump it here and in
# .ci/run (the two lists must agree; test_ci_pins_match checks it).
CLI_PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.171.0",
}


def cli_path(name: str) -> str:
    """The CLI's executable, or skip the test saying how to get it."""
    override = os.environ.get(f"SUBLANE_TEST_{name.upper()}")
    if override:
        return override
    local = BIN / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found:
        return found
    pytest.skip(
        f"the real {name} CLI is not installed: npm install --prefix .clis {CLI_PACKAGES[name]}"
    )
    raise AssertionError("unreachable")


def quiet_env(home: Path) -> dict[str, str]:
    """An environment for a CLI run: its own HOME, no telemetry, no auto-update, no proxy."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "CLAUDE_"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        NO_COLOR="1",
    )
    return env


async def run_cli(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float
) -> tuple[bytes, bytes]:
    """Run a CLI to its end (stdin closed): its stdout and stderr. Fails the test, saying
    which, when it runs past the timeout or exits non-zero."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"{Path(argv[0]).name} {argv[1]} did not finish within {timeout:g}s")
    assert process.returncode == 0, err.decode(errors="replace")[-2000:]
    return out, err
