"""The scheduling-yield simulator (SPEC §12): traces, a simulated upstream, the real pool.

    results = run_builtin("team", ["round_robin", "score", "cost_aware"], seed=1)

Pure core: a fake clock, no network, no database. `sublane simulate` is its command line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sublane_desktop.core.simulation.engine import Simulation, route_of, simulate
from sublane_desktop.core.simulation.metrics import JSON_FIELDS, RunResult
from sublane_desktop.core.simulation.plans import PLANS, PoolPlan, build_accounts
from sublane_desktop.core.simulation.traces import TRACES, Trace, Turn, from_records, generate

__all__ = [
    "JSON_FIELDS",
    "PLANS",
    "TRACES",
    "PoolPlan",
    "RunResult",
    "Simulation",
    "Trace",
    "Turn",
    "build_accounts",
    "from_records",
    "generate",
    "run_builtin",
    "run_trace",
    "simulate",
]


def run_trace(
    trace: Trace,
    policies: Iterable[str],
    *,
    seed: int = 1,
    accounts: int | None = None,
    plan: PoolPlan | None = None,
) -> list[RunResult]:
    """Every policy on the same trace and the same starting accounts."""
    chosen = plan or with_providers(PLANS.get(trace.name, PLANS["records"]), trace)
    return simulate(
        trace,
        policies,
        lambda: build_accounts(chosen, trace.start, seed, accounts),
        max_concurrency=chosen.max_concurrency,
    )


def with_providers(plan: PoolPlan, trace: Trace) -> PoolPlan:
    """The plan, with a Codex or Antigravity account when the trace asks those providers for
    models (a recorded trace keeps each record's model) and the plan has none."""
    asked = {route_of(turn).provider for turn in trace.turns}
    if "codex" in asked and plan.codex == 0:
        plan = replace(plan, codex=1)
    if "antigravity" in asked and plan.antigravity == 0:
        plan = replace(plan, antigravity=1)
    return plan


def run_builtin(
    name: str,
    policies: Iterable[str],
    *,
    seed: int = 1,
    days: float = 7.0,
    accounts: int | None = None,
) -> list[RunResult]:
    return run_trace(generate(name, seed, days), policies, seed=seed, accounts=accounts)
