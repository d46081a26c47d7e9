"""`sublane simulate`: compare scheduling policies on a simulated week (SPEC §12).

    sublane simulate --trace team --policy round_robin score cost_aware [--seed N] [--days D]
                     [--accounts N] [--json] [--plot FILE.png]
    sublane simulate --from-records [--policy …]
    sublane simulate --explain [--policy P] [--days D]   (a scripted day, decision by decision)

The engine is core/simulation (pure); this module parses flags, reads the request records
through the service for --from-records, prints the table or the JSON array, and has the plot
painted (gui/yield_plot.py, QPainter offscreen).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sublane_desktop.cli.context import CliError, Context
from sublane_desktop.core.scheduler import MODES
from sublane_desktop.core.simulation import TRACES

POLICIES = ("round_robin", "score", "cost_aware")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace", default="team", choices=TRACES, help="built-in traffic (default: team)"
    )
    parser.add_argument(
        "--from-records",
        action="store_true",
        help="replay the stored request records instead of a built-in trace",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print a scripted day (levers, a 429, a reset) decision by decision: which"
        " account served each request and why",
    )
    parser.add_argument(
        "--policy",
        nargs="+",
        metavar="P",
        help=f"scheduling policies to compare ({', '.join(MODES)}; default: all; --explain: score)",
    )
    parser.add_argument("--seed", type=int, default=1, help="trace and account seed (1)")
    parser.add_argument(
        "--days", type=float, help="trace length (7; --explain: 1, in hourly steps)"
    )
    parser.add_argument("--accounts", type=int, help="simulated accounts (default per trace)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="write utilization over time per account and window",
    )


def cmd_simulate(ctx: Context, args: argparse.Namespace) -> int:
    from sublane_desktop.core.simulation import from_records, generate, run_trace
    from sublane_desktop.core.simulation.report import table, winner

    policies = args.policy or (["score"] if args.explain else list(POLICIES))
    unknown = [p for p in policies if p not in MODES]
    if unknown:
        raise CliError(f"--policy: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    if args.accounts is not None and not 1 <= args.accounts <= 26:
        raise CliError("--accounts must be from 1 to 26")
    days = args.days if args.days is not None else (1.0 if args.explain else 7.0)
    if not 0 < days <= 28:
        raise CliError("--days must be more than 0 and at most 28")
    if args.explain:
        return explain(args, policies, days)
    if args.plot is not None and args.plot.suffix.lower() != ".png":
        raise CliError("--plot needs a .png file name")
    if args.from_records:
        from sublane_desktop.service import recorded_requests

        try:
            trace = from_records(recorded_requests(ctx.offline.store, time.time()), args.seed)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    else:
        trace = generate(args.trace, args.seed, days)
    results = run_trace(trace, policies, seed=args.seed, accounts=args.accounts)
    if args.plot is not None:
        from sublane_desktop.gui.yield_plot import render

        try:
            render(results, args.plot)
        except OSError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2))
        return 0
    print(table(results))
    if len(results) > 1:
        print(f"best: {winner(results)} (most turns served, then least quota wasted)")
    if args.plot is not None:
        print(f"plot: {args.plot}")
    return 0


def explain(args: argparse.Namespace, policies: list[str], days: float) -> int:
    from sublane_desktop.core.simulation.scripted_day import explain as scripted_day

    if args.json or args.plot is not None or args.from_records:
        raise CliError("--explain prints a scripted day; it takes no --json, --plot or records")
    for policy in policies:
        if len(policies) > 1:
            print(f"== {policy}")
        print("\n".join(scripted_day(days * 24, policy)))
    return 0
