"""The simulated pool (R-SIM-3): how many accounts, their capacities and staggered resets.

Capacities are in quota units (a fresh input token = 1; see upstream.py for the weights) and
sized per trace so that the week's demand is close to what the pool can serve: a pool with
plenty of room makes every policy look the same, a hopeless one makes them all fail alike.
The 5h window holds about a sixth of the week, the Fable bucket about a third.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sublane_desktop.core.gauges import FAMILY_WINDOWS
from sublane_desktop.core.simulation.upstream import (
    ANTIGRAVITY_MODELS,
    FIVE_HOURS,
    WEEK,
    SimAccount,
    Window,
)

DAY = 86400.0


@dataclass(frozen=True)
class PoolPlan:
    accounts: int  # Anthropic accounts
    week_capacity: float  # quota units per account per week
    max_concurrency: int = 2
    antigravity: int = 0  # Antigravity accounts: Gemini, and the spill for Claude (R-AG-3)
    codex: int = 0  # Codex accounts, for recorded GPT traffic


PLANS = {
    "solo": PoolPlan(accounts=2, week_capacity=20e6),
    "team": PoolPlan(accounts=4, week_capacity=55e6),
    "bursty": PoolPlan(accounts=3, week_capacity=20e6),
    "fable-heavy": PoolPlan(accounts=3, week_capacity=50e6),
    "records": PoolPlan(accounts=3, week_capacity=32e6),
}
FIVE_HOUR_SHARE = 1 / 6
FABLE_SHARE = 1 / 3


def build_accounts(
    plan: PoolPlan, start: float, seed: int, count: int | None = None
) -> list[SimAccount]:
    """Accounts whose weeks reset at staggered times and start partly used (seeded)."""
    rng = random.Random(f"accounts:{seed}")
    n = count or plan.accounts
    accounts = []
    for i in range(n):
        week_cap = plan.week_capacity
        # Week resets spread over the week, each account somewhere in its own week already.
        week_reset = start + ((i + rng.uniform(0.2, 0.8)) / n) * WEEK
        fable_reset = start + ((i + rng.uniform(0.2, 0.8)) / n) * WEEK + rng.uniform(-1, 1) * DAY
        if fable_reset <= start:
            fable_reset += WEEK
        windows = {
            "five_hour": Window(
                "five_hour",
                week_cap * FIVE_HOUR_SHARE,
                FIVE_HOURS,
                start + rng.uniform(0.5, 5.0) * 3600,
            ),
            "seven_day": Window(
                "seven_day", week_cap, WEEK, week_reset, used=week_cap * rng.uniform(0.1, 0.5)
            ),
            "fable": Window(
                "fable",
                week_cap * FABLE_SHARE,
                WEEK,
                fable_reset,
                used=week_cap * FABLE_SHARE * rng.uniform(0.0, 0.4),
            ),
        }
        accounts.append(SimAccount(f"acct-{chr(ord('a') + i)}", windows))
    for i in range(plan.codex):
        accounts.append(codex_account(f"codex-{chr(ord('a') + i)}", plan, start, rng))
    for i in range(plan.antigravity):
        accounts.append(antigravity_account(f"ag-{chr(ord('a') + i)}", plan, start, rng))
    return accounts


def codex_account(name: str, plan: PoolPlan, start: float, rng: random.Random) -> SimAccount:
    """Codex: a 5-hour and a weekly window, named by their length (R-WF-4)."""
    week_cap = plan.week_capacity
    windows = {
        "five_hour": Window(
            "five_hour", week_cap * FIVE_HOUR_SHARE, FIVE_HOURS, start + rng.uniform(0.5, 5) * 3600
        ),
        "seven_day": Window(
            "seven_day",
            week_cap,
            WEEK,
            start + rng.uniform(0.2, 0.8) * WEEK,
            used=week_cap * rng.uniform(0.1, 0.5),
        ),
    }
    return SimAccount(name, windows, provider="codex")


def antigravity_account(name: str, plan: PoolPlan, start: float, rng: random.Random) -> SimAccount:
    """Antigravity: one ~5-hour window per model family (R-AG-4), each about what an
    Anthropic account's 5-hour window holds; it serves only the models it lists."""
    windows = {
        family: Window(
            family,
            plan.week_capacity * FIVE_HOUR_SHARE,
            FIVE_HOURS,
            start + rng.uniform(0.5, 5.0) * 3600,
        )
        for family in FAMILY_WINDOWS
    }
    return SimAccount(name, windows, provider="antigravity", models=ANTIGRAVITY_MODELS)
