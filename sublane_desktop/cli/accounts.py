"""`sublane account add|import-claude-code|import-codex|list` (SPEC §2)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sublane_desktop.accounts import credentials
from sublane_desktop.cli.context import CliError, Context
from sublane_desktop.core import json_text

PROVIDERS = ("anthropic", "codex", "antigravity")
IMPORTS = ("import-claude-code", "import-codex", "import-gemini", "import-antigravity")


def read_secret_json(provider: str) -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        raise CliError("the account secret is read from stdin as JSON (never from arguments)")
    text = sys.stdin.read()
    if not text.strip():
        raise CliError("no secret on stdin: pipe the account's secret JSON into this command")
    try:
        secret = json_text.parse(text)
    except json_text.TooDeep:
        raise CliError(
            "secret on stdin is not an account secret: its JSON is nested too deeply"
        ) from None
    except ValueError:
        raise CliError("secret on stdin is not valid JSON") from None
    return validate_secret(provider, secret)


def validate_secret(provider: str, secret: Any) -> dict[str, Any]:
    try:
        return credentials.validate_secret(provider, secret)
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None


def save_account(
    ctx: Context,
    provider: str,
    name: str,
    group: str,
    base_url: str | None,
    limit: int,
    secret: dict[str, Any],
    replace: bool = False,
) -> str:
    try:
        account_id, verb, kind = ctx.offline.add_account(
            provider, name, group, base_url, limit, secret, replace=replace
        )
    except credentials.AccountExists as exc:
        raise CliError(f"{exc}; pass --replace to give it this credential in place") from None
    except credentials.CredentialError as exc:
        raise CliError(str(exc)) from None
    return f"{verb} {provider} account {name} (id {account_id}, {kind})"


def cmd_account(ctx: Context, args: argparse.Namespace) -> int:
    which = args.account_command
    if which == "login":  # browser sign-in (R-LOGIN-1)
        from sublane_desktop.cli.login import cmd_login

        return cmd_login(ctx, args)
    if which == "add":
        if args.provider not in PROVIDERS:
            raise CliError(
                f"unknown provider {args.provider!r} (choose from {', '.join(PROVIDERS)})"
            )
        if not 1 <= args.max_concurrency <= 8:
            raise CliError("--max-concurrency must be from 1 to 8")
        secret = read_secret_json(args.provider)
        print(
            save_account(
                ctx,
                args.provider,
                args.name,
                args.group,
                args.base_url,
                args.max_concurrency,
                secret,
                replace=args.replace,
            )
        )
        tell_server(ctx)
        return 0
    if which in IMPORTS:  # a tool's login, found where the tool keeps it (R-LOGIN-2/3)
        tool = which.removeprefix("import-")
        try:
            line, notes, warning = ctx.offline.import_login(
                tool,
                args.file,
                args.name if args.name is not None else tool,
                args.group,
                args.base_url,
                detach=args.detach,
            )
        except credentials.CredentialError as exc:
            raise CliError(str(exc)) from None
        if warning:  # said plainly, where a person looks for warnings (Gemini CLI, R-LOGIN-3)
            print(f"sublane: warning: {warning}", file=sys.stderr)
        print(line)
        for note in notes:
            print(f"note: {note}")
        tell_server(ctx)
        return 0
    if which == "list":
        runtime = runtime_snapshot(ctx)
        if args.json:
            print(json.dumps(runtime["accounts"], indent=2))
        else:
            print_accounts(runtime)
        return 0
    from sublane_desktop.cli.levers import cmd_account_lever

    return cmd_account_lever(ctx, args)


def tell_server(ctx: Context) -> None:
    """After the CLI wrote an account: a running server takes it up now and reads its quota
    at once (R-UI-14), instead of at its next request or credential look (within 5 s). The
    account is stored either way, so a server that does not answer is no error; with none
    running, the next one to start reads it (service/fresh_gauges.py)."""
    server = ctx.running_server()
    if server is None:
        return
    try:
        ctx.api(server, "GET", "/api/accounts/runtime")  # re-reads the catalog
    except CliError:
        pass


def runtime_snapshot(ctx: Context) -> dict[str, Any]:
    """The live pool from a running server, or the stored one built by the same service code."""
    server = ctx.running_server()
    if server is not None:
        return ctx.api(server, "GET", "/api/accounts/runtime")
    return ctx.offline.pool_view()


def print_accounts(runtime: dict[str, Any]) -> None:
    accounts = runtime["accounts"]
    if not accounts:
        print(
            "no accounts yet: add one with `sublane account import-claude-code` or "
            "`sublane account add`"
        )
        return
    print(
        f"{'ID':>3}  {'NAME':<18} {'PROVIDER':<11} {'STATE':<16} {'FLIGHT':>6}  "
        f"{'5H':>5} {'7D':>5} {'FABLE':>5}"
    )
    for a in accounts:

        def gauge(name: str, a: dict[str, Any] = a) -> str:
            g = a["gauges"].get(name)
            if g is None:
                return "-"
            if g.get("absent"):  # the upstream has no such window (a Codex plan without 5h)
                return "none"
            return "cold" if g["cold"] else f"{round((g['utilization'] or 0) * 100)}%"

        mark = "*" if a["current"] else " "
        # Antigravity's per-family gauges follow the fixed columns (R-AG-4)
        families = "".join(
            f"  {name} {gauge(name)}"
            for name in a["gauges"]
            if name not in ("five_hour", "seven_day", "fable")
        )
        print(
            f"{a['id']:>3}{mark} {a['name']:<18} {a['provider']:<11} {a['state']:<16} "
            f"{a['in_flight']:>3}/{a['max_concurrency']:<2}  {gauge('five_hour'):>5} "
            f"{gauge('seven_day'):>5} {gauge('fable'):>5}{families}"
        )
        if a.get("auth_reason"):  # why it cannot serve, and the fix (R-UI-8, R-LOGIN-4)
            print(f"      {a['auth_reason']}")
        for hold in a.get("holds") or []:  # which evidence holds it, until when (R-OBS-3)
            print(f"      {hold['words']}")
