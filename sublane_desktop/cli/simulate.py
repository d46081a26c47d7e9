"""`sublane simulate`: compare scheduling policies on a simulated week (SPEC §12)."""

from __future__ import annotations

import argparse

from sublane_desktop.cli.context import CliError, Context


def cmd_simulate(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop import simulate_cli

    try:
        return simulate_cli.run(args, lambda: ctx.store)
    except simulate_cli.SimulateError as exc:
        raise CliError(str(exc)) from None
