"""`sublane user add`."""

from __future__ import annotations

import argparse

from sublane_desktop.cli.context import CliError, Context


def cmd_user(ctx: Context, args: argparse.Namespace) -> int:
    try:
        user = ctx.offline.add_user(args.name)
    except ValueError as exc:  # the name is taken, or not a usable name
        raise CliError(str(exc)) from None
    print(f"added member {user['name']} (id {user['id']})")
    return 0
