"""A scripted day through the real scheduler, as a trace: who served what, and why.

    sublane simulate --explain [--days 1]

Three Claude accounts with different weekly positions; every step sends one main-lane and one
Fable request; each served request moves that account's gauges the way response headers would.
Operator levers and upstream 429s happen at scripted times. Only core is used (fake clock, no
network, no database), so the trace is the scheduler's own decisions, reproducible to the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Outcome, Pool
from sublane_desktop.core.routing import ModelRoute, route_model

H = 3600.0
STEP_MINUTES = 60.0


def _route(model: str) -> ModelRoute:
    route = route_model(model)
    assert route is not None  # a known model name always has a route
    return route


MAIN = _route("claude-sonnet-4-5")
FABLE = _route("claude-fable-5")


@dataclass
class Plan:
    """Where an account starts: utilizations and hours to each reset."""

    name: str
    five: float
    week: float
    week_reset_h: float
    fable: float | None  # None: the Fable bucket has never been seen (cold)
    fable_reset_h: float
    burn: float  # utilization one request adds to the 5h window


PLANS = [
    Plan("work", five=0.20, week=0.55, week_reset_h=100, fable=0.07, fable_reset_h=38, burn=0.06),
    Plan("personal", five=0.05, week=0.30, week_reset_h=20, fable=0.00, fable_reset_h=3, burn=0.08),
    Plan("team", five=0.10, week=0.20, week_reset_h=150, fable=None, fable_reset_h=0, burn=0.05),
]

EVENTS = {  # step hour -> what happens
    6.0: "pause team",
    9.0: "unpause team",
    11.0: "switch team",
    15.0: "fable 429 on current fable account",
    20.0: "reset-usage",
}


@dataclass
class Day:
    pool: Pool
    clock: FakeClock
    # Each account's next reset per window, rolled forward as the fake clock passes it.
    resets: dict[int, dict[str, float]] = field(default_factory=dict)

    def observe(self, account: AccountState, window: str, util: float) -> None:
        resets = self.resets[account.id]
        while resets[window] <= self.clock.now():  # windows roll over
            resets[window] += 5 * H if window == "five_hour" else 7 * 24 * H
        account.gauges.apply(
            Observation(window, min(util, 1.5), resets[window], self.clock.now(), "headers")
        )


def build(policy: str = "score") -> Day:
    clock = FakeClock(start=1_800_000_000.0)
    pool = Pool(clock)
    pool.scheduler.mode = policy
    pool.sync_accounts(
        AccountState(id=i + 1, name=p.name, provider="anthropic", max_concurrency=4)
        for i, p in enumerate(PLANS)
    )
    day = Day(pool, clock)
    for account, plan in zip(pool.accounts.values(), PLANS, strict=True):
        now = clock.now()
        day.resets[account.id] = {
            "five_hour": now + 5 * H,
            "seven_day": now + plan.week_reset_h * H,
            "fable": now + plan.fable_reset_h * H,
        }
        day.observe(account, "five_hour", plan.five)
        day.observe(account, "seven_day", plan.week)
        if plan.fable is not None:
            day.observe(account, "fable", plan.fable)
    pool.scheduler.current[(1, "anthropic")] = 1
    return day


def serve(day: Day, route: ModelRoute, burn: dict[str, float]) -> str:
    pool, clock = day.pool, day.clock
    try:
        lease = pool.acquire(Demand(group_id=1, route=route))
    except GatewayError as err:
        return f"{'-':<9} refused: {err.code} ({err.message})"
    decision = pool.scheduler.last
    chosen_score = decision.score if decision else None  # as decided, before the burn
    account = lease.account
    lease.release(Outcome.SUCCESS)
    now = clock.now()
    g = account.gauges
    day.observe(account, "five_hour", (g.five_hour.reading(now) or 0) + burn[account.name])
    day.observe(account, "seven_day", (g.seven_day.reading(now) or 0) + burn[account.name] / 8)
    if route.fable:
        day.observe(account, "fable", (g.fable.reading(now) or 0) + burn[account.name] / 3)
    score = f"{chosen_score:6.2f}" if chosen_score is not None else "     -"
    return f"{account.name:<9} score {score}  {decision.reason if decision else ''}"


def gauges_line(pool: Pool, now: float) -> str:
    parts = []
    for a in pool.accounts.values():

        def pct(window: str, a: AccountState = a) -> str:
            value = a.gauges.get(window).reading(now)
            return " cold" if value is None else f"{value * 100:4.0f}%"

        parts.append(f"{a.name}[{pct('five_hour')}{pct('seven_day')}{pct('fable')}]")
    return " ".join(parts)


def explain(hours: float = 24.0, policy: str = "score") -> list[str]:
    """The scripted day's lines under `policy`: every hour a main-lane and a Fable request,
    the scripted events, and the gauges every four hours."""
    day = build(policy)
    pool, clock = day.pool, day.clock
    burn = {p.name: p.burn for p in PLANS}
    lines = ["time   | event / lane  | account   | decision", "gauges: name[5h 7d fable]"]
    steps = int(hours * 60 / STEP_MINUTES)
    for step in range(steps + 1):
        hour = step * STEP_MINUTES / 60
        event = EVENTS.get(hour)
        stamp = f"{int(hour):02d}:{int(hour * 60) % 60:02d}"
        if event:
            apply_event(pool, event)
            lines.append(f"{stamp}  | ** {event}")
        pool.evaluate()  # the 30 s tick, folded into each step
        lines.append(f"{stamp}  | main          | {serve(day, MAIN, burn)}")
        lines.append(f"{stamp}  | fable         | {serve(day, FABLE, burn)}")
        if step % 4 == 0:
            lines.append(f"       | gauges        | {gauges_line(pool, clock.now())}")
        clock.advance(STEP_MINUTES * 60)
    return lines


def apply_event(pool: Pool, event: str) -> None:
    verb, _, rest = event.partition(" ")
    if verb == "pause":
        pool.set_paused(rest, True)
    elif verb == "unpause":
        pool.set_paused(rest, False)
    elif verb == "switch":
        pool.switch(rest)
    elif verb == "reset-usage":
        pool.reset_usage()
    elif verb == "fable":
        lane = pool.scheduler.fable_current.get((1, "anthropic"))
        if lane is not None:
            lease = pool.acquire(Demand(group_id=1, route=FABLE))
            lease.release(Outcome.FABLE_FAILURE, status=429)
