"""R-WF-1 with the real Codex CLI: `codex exec` run once straight at the fake ChatGPT backend and
once through SubLane (configured as the README says) delivers the same request to the backend.

What Codex CLI 0.171.0 sends, found with a capture server first: with a custom model provider
(`[model_providers.X]`, as the README sets up) it does not try the WebSocket (a provider opts in
with `supports_websockets`), it lists models with `GET {base}/models?client_version=0.171.0`,
then makes one `POST {base}/responses`, uncompressed JSON, `originator: codex_exec` and a
`codex_exec/0.171.0 (…)` user agent. The socket route is covered in tests/proxy/test_codex_wire.

Both runs share one CODEX_HOME (so one installation id) and one working directory, and the
SubLane account holds the very token and ChatGPT account id the direct run reads from
auth.json, so even the credential headers must come out equal. Left out of the comparison,
each for its reason:
- per-request ids: Codex makes a new session/thread id (a UUID, in `session-id`, `thread-id`,
  `x-client-request-id`, `x-codex-window-id`, `x-codex-turn-metadata`, `prompt_cache_key`,
  `client_metadata`), new message ids in `input[].id` and a turn start time in milliseconds;
  every UUID and that time are replaced by placeholders in both, the rest compared byte for
  byte;
- the key order inside `client_metadata`: Codex builds it from a hash map, so two runs of
  Codex itself order it differently; it is compared as an object (that SubLane leaves body
  bytes as they are is shown byte for byte in tests/proxy/test_codex_wire);
- header order and the spelling case of header names: HTTP names are case-insensitive and
  their order carries nothing (RFC 9110 §5.1, §5.3); the values are compared exactly.

A third run goes through SubLane's WebSocket (`supports_websockets = true`; Codex opens
`GET /v1/responses` with `openai-beta: responses_websockets=2026-02-06` and falls back to HTTP
only on a 426). SubLane sends each socket turn upstream as an HTTP POST, written as Codex writes
the same request over HTTP (`"stream": true` after the model, compact JSON, the socket-only
`client_metadata` key `x-codex-ws-stream-request-start-ms` left out, `Content-Type` and `Accept`
as Codex sends them over HTTP, and `x-codex-turn-metadata` / `x-codex-window-id`, which the
upgrade carried once with the connection's values, given this turn's from its
`client_metadata`): the body compares equal; of the headers only `Accept-Encoding` differs,
because Codex sends none on the upgrade request.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import pytest

from tests.fake_codex import FakeCodex
from tests.real_cli import cli_path, quiet_env, run_cli

RUN_TIMEOUT = 25.0
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_STARTED = re.compile(rb'(turn_started_at_unix_ms\\?":)\d+')


def _jwt(claims: dict) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.sig"


def chatgpt_login(home: Path, account_id: str) -> str:
    """A ChatGPT login in auth.json, as `codex login` writes it; returns its access token."""
    claims = {"chatgpt_account_id": account_id, "chatgpt_plan_type": "plus"}
    far = int(time.time()) + 30 * 86400
    access = _jwt({"exp": far, "https://api.openai.com/auth": claims})
    auth = {
        "OPENAI_API_KEY": None,
        "tokens": {
            "id_token": _jwt(
                {"email": "cli@example.com", "exp": far, "https://api.openai.com/auth": claims}
            ),
            "access_token": access,
            "refresh_token": "rt-cli",
            "account_id": account_id,
        },
        "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (home / "auth.json").write_text(json.dumps(auth))
    return access


def provider_config(name: str, base_url: str, extra: str) -> str:
    # Codex offers its image tool only to a ChatGPT login it talks to itself, so the direct run
    # would carry one tool more than the run through SubLane (an API-key style provider): the
    # tool is switched off in both, which leaves both asking the same thing.
    return (
        f'model = "gpt-5.5"\nmodel_provider = "{name}"\n\n[features]\nimage_generation = false\n\n'
        f'[model_providers.{name}]\nname = "{name}"\nbase_url = "{base_url}"\n'
        f'wire_api = "responses"\n{extra}'
    )


async def run_codex(codex: str, home: Path, workdir: Path, env: dict[str, str]) -> None:
    argv = [codex, "exec", "--skip-git-repo-check", "say hi"]
    out, _ = await run_cli(argv, cwd=workdir, env=env, timeout=RUN_TIMEOUT)
    assert b"Hello from the fake Codex upstream." in out


def normalised(raw: bytes) -> bytes:
    return _STARTED.sub(rb"\1<time>", _UUID.sub(b"<uuid>", raw))


def split_metadata(raw: bytes) -> tuple[bytes, dict]:
    """(the body's bytes without its `client_metadata` value, that value): Codex fills
    `client_metadata` from a hash map, so its key order differs from one run of Codex to the
    next; it is compared as an object, everything around it byte for byte."""
    text = normalised(raw).decode()
    start = text.index('"client_metadata":') + len('"client_metadata":')
    metadata, end = json.JSONDecoder().raw_decode(text, start)
    return (text[:start] + text[end:]).encode(), metadata


def header_set(seen) -> list[tuple[str, bytes]]:
    return sorted((name.lower(), normalised(value.encode())) for name, value in seen.header_items)


async def test_codex_cli_reaches_the_backend_the_same_through_sublane(
    codex_harness, codex_upstream: FakeCodex, tmp_path: Path
):
    codex = cli_path("codex")
    h = codex_harness
    home, workdir = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    workdir.mkdir()
    env = quiet_env(tmp_path / "user-home")
    env["CODEX_HOME"] = str(home)
    token = chatgpt_login(home, "acct-cli")
    await h.add_codex_account("cli", token)
    key = await h.create_key()

    # 1. straight at the fake backend, signed in with ChatGPT
    (home / "config.toml").write_text(
        provider_config("direct", codex_upstream.url, "requires_openai_auth = true\n")
    )
    await run_codex(codex, home, workdir, env)
    # 2. through SubLane, as the README configures Codex
    (home / "config.toml").write_text(
        provider_config("sublane", h.url + "/v1", 'env_key = "SUBLANE_KEY"\n')
    )
    await run_codex(codex, home, workdir, dict(env, SUBLANE_KEY=key))

    # 3. through SubLane over its WebSocket (a provider that opts in): each turn goes upstream
    #    as an HTTP POST
    (home / "config.toml").write_text(
        provider_config(
            "sublane", h.url + "/v1", 'env_key = "SUBLANE_KEY"\nsupports_websockets = true\n'
        )
    )
    await run_codex(codex, home, workdir, dict(env, SUBLANE_KEY=key))

    direct, relayed, socket = codex_upstream.seen
    assert (relayed.path, relayed.query) == (direct.path, direct.query) == ("/responses", "")
    assert dict(direct.header_items)["originator"] == "codex_exec"
    assert header_set(relayed) == header_set(direct)
    assert key not in json.dumps(relayed.header_items)
    assert split_metadata(relayed.raw) == split_metadata(direct.raw)
    assert relayed.raw != normalised(relayed.raw)  # the ids really were there and left out
    assert len(relayed.raw) == len(direct.raw)
    # The socket turn: the same body; the same headers but Accept-Encoding, which Codex does
    # not send on a WebSocket upgrade (the relay's own then goes, and it decodes the answer).
    assert socket.path == "/responses"
    assert split_metadata(socket.raw) == split_metadata(direct.raw)
    without_encoding = [h for h in header_set(direct) if h[0] != "accept-encoding"]
    assert [h for h in header_set(socket) if h[0] != "accept-encoding"] == without_encoding


@pytest.fixture(autouse=True)
def _needs_the_cli() -> None:
    cli_path("codex")  # skips, saying how to install it, when the CLI is absent
