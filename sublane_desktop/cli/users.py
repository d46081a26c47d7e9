"""`sublane user add`."""

from __future__ import annotations

import argparse

from sublane_desktop.cli.context import CliError, Context


def cmd_user(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.store import repositories as repo

    try:
        with ctx.store.db.atomic():
            user = repo.add_user(args.name)
    except repo.Conflict as exc:
        raise CliError(str(exc)) from None
    print(f"added member {user.name} (id {user.id})")
    return 0

