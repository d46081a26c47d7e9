"""`sublane account login claude|codex|antigravity [--name N] [--no-browser]` and
`sublane account login NAME` (R-LOGIN-1).

A new sign-in adds an account (named --name, else the e-mail the provider names, else
`<provider>-<n>`); NAME (or an id) signs an existing account in again in place: a new revision,
`auth_failed` cleared, the same id, settings and conversations. Either way the account is then
verified and its quota read, through the running server when one runs (so the live pool has it
at once), else by the service in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from typing import Any

from sublane_desktop.accounts import credentials
from sublane_desktop.cli.context import CliError, Context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="claude|codex|antigravity|NAME",
        help="a provider to sign a new account in, or an account (name or id) to sign in again",
    )
    parser.add_argument("--name", metavar="N", help="the new account's name")
    parser.add_argument(
        "--no-browser",
        action="store_true",
        help="print the address to open and read the code (or the address you end on) from stdin",
    )


def cmd_login(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.accounts import signin
    from sublane_desktop.accounts.login_flow import flow_for_provider, flows

    known = flows()
    accounts = _accounts(ctx)
    existing: dict[str, Any] | None = None
    if args.target in known:
        flow = known[args.target]
        if args.name is not None:
            _check_new_name(args.name, accounts)
        same = next((a for a in accounts if a["name"] == args.target), None)
        if same is not None:  # the provider's word wins; say how to reach the account
            print(
                f"(this signs a new {flow.label} account in; to sign the account named "
                f"{args.target!r} in again, use `sublane account login {same['id']}`)"
            )
    else:
        if args.name is not None:
            raise CliError("--name is for a new account; `sublane account login NAME` keeps NAME")
        existing = next(
            (a for a in accounts if a["name"] == args.target or str(a["id"]) == args.target),
            None,
        )
        if existing is None:
            raise CliError(
                f"unknown account {args.target!r}: sign a new one in with "
                "`sublane account login claude|codex|antigravity`"
            )
        found = flow_for_provider(existing["provider"])
        if found is None:
            raise CliError(f"{existing['provider']} accounts have no browser sign-in")
        flow = found
    try:
        signed = asyncio.run(_sign_in(flow, args.no_browser))
    except signin.SignInError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        raise CliError("sign-in interrupted; nothing was changed") from None
    if existing is not None:
        name = existing["name"]
    else:
        name = args.name or signin.default_name(signed, {a["name"] for a in accounts})
    secret = _validated(flow.provider, signed.secret)
    try:
        account_id, _verb, _kind = ctx.offline.add_account(
            flow.provider, name, "default", None, 2, secret, replace=existing is not None
        )
    except credentials.CredentialError as exc:
        hint = ""
        if existing is None and "already exists" in str(exc):
            hint = f"; sign it in again with `sublane account login {name}`"
        raise CliError(f"{exc}{hint}") from None
    done = "signed in again" if existing is not None else "signed in"
    print(f"{done}: {flow.provider} account {name} (id {account_id})")
    result = _settle(ctx, account_id)
    verdict = result["verdict"]
    print(f"verify: {verdict.get('result')} — {verdict.get('detail')}")
    print(f"quota: {result['quota']}")
    return 0 if verdict.get("result") == "ok" else 1


def _accounts(ctx: Context) -> list[dict[str, Any]]:
    from sublane_desktop.cli.accounts import runtime_snapshot

    return list(runtime_snapshot(ctx)["accounts"])


def _check_new_name(name: str, accounts: list[dict[str, Any]]) -> None:
    """Refused before any browser opens: the sign-in would be wasted."""
    from sublane_desktop.core.names import BadInput, check_name

    try:
        check_name(name, "account")
    except BadInput as exc:  # the same rule the store applies, said before the browser opens
        raise CliError(str(exc)) from None
    if any(a["name"] == name for a in accounts):
        raise CliError(
            f"account {name!r} already exists; sign it in again with `sublane account login {name}`"
        )


def _validated(provider: str, secret: dict[str, Any]) -> dict[str, Any]:
    try:
        return credentials.validate_secret(provider, secret)
    except credentials.CredentialError as exc:
        raise CliError(f"the sign-in gave a login SubLane cannot use: {exc}") from None


async def _sign_in(flow: Any, no_browser: bool) -> Any:
    from sublane_desktop.accounts import signin

    def show(url: str) -> None:
        if no_browser:
            print(f"Open this address in a browser and sign in to {flow.label}:")
            print(url)
            if flow.paste_back_path:
                print("Then paste the code the page shows here and press Enter:")
            else:
                print(
                    "Your browser then ends on an address that does not load: copy that whole "
                    "address (or its code) here and press Enter:"
                )
        else:
            print(f"Opening your browser to sign in to {flow.label}. If it does not open, visit:")
            print(url)
        sys.stdout.flush()

    return await signin.sign_in(
        flow,
        env=os.environ,
        show_url=show,
        paste=_read_stdin_line if no_browser else None,
    )


async def _read_stdin_line() -> str:
    """One line from stdin on a daemon thread, so a timeout leaves no thread to wait for."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        line = sys.stdin.readline() if sys.stdin is not None else ""

        def give() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(give)

    threading.Thread(target=read, name="sign-in-paste", daemon=True).start()
    return await future


def _settle(ctx: Context, account_id: int) -> dict[str, Any]:
    """Verify and read the quota: through the running server, or a service in this process."""
    server = ctx.running_server()
    if server is not None:
        return ctx.api(server, "POST", f"/api/accounts/{account_id}/signed-in", {})
    return asyncio.run(_settle_here(ctx, account_id))


async def _settle_here(ctx: Context, account_id: int) -> dict[str, Any]:
    from sublane_desktop.accounts.signin import settle
    from sublane_desktop.service import Service

    service = Service(ctx.data_dir, host="127.0.0.1", port=0)
    await service.start()
    try:
        return await settle(service, account_id)
    finally:
        await service.stop(drain_timeout=0)
