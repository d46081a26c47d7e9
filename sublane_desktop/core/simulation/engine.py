"""Replays a trace through the real Pool and Scheduler on a fake clock (R-SIM-1).

The engine is the proxy's stand-in, not the pool's: for each turn it asks the real `Pool` for a
lease (with a conversation key or without), sends the request to the simulated upstream
account, feeds the answer's rate-limit headers to the account's gauges, and releases the lease
with the outcome the relay would report. Around it runs what the service does: the 30-second
evaluation tick and the traffic-driven quota poll of stale gauges (at most one per account per
5 minutes). A client retries a refused request after its Retry-After, a few times, then gives
the turn up.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sublane_desktop.core import cache_miss
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState, Demand, Lease, Outcome, Pool
from sublane_desktop.core.routing import ModelRoute, route_model
from sublane_desktop.core.scheduler import MODES
from sublane_desktop.core.simulation.metrics import (
    RunResult,
    Sample,
    is_cache_break,
    quota_fractions,
    window_ledger,
)
from sublane_desktop.core.simulation.traces import Trace, Turn
from sublane_desktop.core.simulation.upstream import SimAccount
from sublane_desktop.core.turn_memory import TurnMemory


def _route(model: str) -> ModelRoute:
    route = route_model(model)
    assert route is not None
    return route


MAIN = _route("claude-sonnet-4-5")
FABLE = _route("claude-fable-5")


def route_of(turn: Turn) -> ModelRoute:
    """The route the client's request takes: its recorded model, else the trace's Claude
    model for its lane."""
    if turn.model:
        route = route_model(turn.model)
        if route is not None:
            return route
    return FABLE if turn.fable else MAIN


GROUP = 1
TICK_SECONDS = 30.0  # the service's evaluation tick (R-LANE-6)
POLL_FLOOR_SECONDS = 300.0  # at most one quota poll per account per 5 minutes (R-GAUGE-3)
SAMPLE_SECONDS = 600.0  # how often the plot's utilization is sampled
MAX_ATTEMPTS = 4  # a client's first try and its retries before the person gives the turn up
RETRY_BOUNDS = (1.0, 300.0)  # what a Retry-After may say (R-PX-8)
# Refusals that say the pool ran out of quota, not of concurrency: capacity that reset unused
# while these happened (or before they did) was wasted.
QUOTA_CODES = ("quota_exhausted", "account_cooling")

# Event kinds, in the order they run within one instant: answers free their slots first.
_DONE, _TICK, _ARRIVE, _SAMPLE = range(4)


@dataclass
class _Attempt:
    turn: Turn
    tries: int = 0


class Simulation:
    def __init__(
        self,
        trace: Trace,
        policy: str,
        accounts: list[SimAccount],
        *,
        max_concurrency: int = 2,
        sample_every: float = SAMPLE_SECONDS,
    ) -> None:
        if policy not in MODES:
            raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(MODES)}")
        self.trace = trace
        self.clock = FakeClock(start=trace.start)
        self.pool = Pool(self.clock)
        self.pool.scheduler.mode = policy
        self.pool.sync_accounts(
            AccountState(
                id=i + 1, name=a.name, provider=a.provider, max_concurrency=max_concurrency
            )
            for i, a in enumerate(accounts)
        )
        self.upstream = {i + 1: a for i, a in enumerate(accounts)}
        # The service asks an account's model list; a spill goes only where the model is
        # served (R-WF-6).
        self.pool.serves = lambda account, model: self.upstream[account.id].serves(model)
        self.result = RunResult(trace.name, policy, trace.seed, requests=len(trace.turns))
        self.sample_every = sample_every
        self._events: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self._polled: dict[int, float] = {}
        # Conversations settle their turns in the pool's own memory (as the relay does into the
        # service's, which the scheduler shares); keyless jobs, which the pool never binds, in
        # one of their own, only for the metric.
        self._keyless = TurnMemory(capacity=1_000_000)
        self._turned_away: dict[str, float | None] = {
            "five_hour": None,
            "seven_day": None,
            "fable": None,
        }

    # --- the event queue --------------------------------------------------------------------

    def _push(self, at: float, kind: int, payload: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at, kind, self._seq, payload))

    def run(self) -> RunResult:
        began = time.perf_counter()
        for turn in self.trace.turns:
            self._push(turn.at, _ARRIVE, _Attempt(turn))
        self._push(self.trace.start, _TICK)
        self._push(self.trace.start, _SAMPLE)
        end = self.trace.end
        while self._events:
            at, kind, _, payload = heapq.heappop(self._events)
            if at > end and kind in (_TICK, _SAMPLE):
                continue  # the week is over; only answers still in flight finish
            self.clock.advance(at - self.clock.now())
            if kind == _DONE:
                payload.release(Outcome.SUCCESS)
            elif kind == _TICK:
                self.pool.evaluate()
                self._push(at + TICK_SECONDS, _TICK)
            elif kind == _ARRIVE:
                self._arrive(payload)
            else:
                self._sample()
                self._push(at + self.sample_every, _SAMPLE)
        self.clock.advance(max(0.0, end - self.clock.now()))
        self._finish()
        self.result.elapsed_s = time.perf_counter() - began
        return self.result

    # --- one request ------------------------------------------------------------------------

    def _arrive(self, attempt: _Attempt) -> None:
        turn = attempt.turn
        now = self.clock.now()
        attempt.tries += 1
        self._poll_stale(now)
        route = route_of(turn)
        demand = Demand(GROUP, route, turn.stream if turn.keyed else None)
        try:
            lease = self.pool.acquire(demand)
        except GatewayError as err:
            self.result.refused += 1
            self.result.refusals[err.code] = self.result.refusals.get(err.code, 0) + 1
            if err.code in QUOTA_CODES:
                self._turn_away(turn, now)
            self._retry(attempt, err.retry_after)
            return
        account = self.upstream[lease.account.id]
        served = account.serve(
            turn.stream,
            turn.fable,
            turn.prefix_tokens,
            turn.new_tokens,
            turn.output_tokens,
            now,
            turn.duration,
            route.upstream_model,
        )
        for obs in served.observations:
            lease.account.gauges.apply(obs)
        if served.status == 429:
            self.result.http_429 += 1
            self._turn_away(turn, now)
            retry_after = served.retry_after
            if served.spent_family is not None and served.family_resets_at is not None:
                # As the relay does with QUOTA_EXHAUSTED: that family rests until its reset,
                # the account serves the others, and nothing cools account-wide (R-WF-5).
                self.pool.rest_family(lease.account, served.spent_family, served.family_resets_at)
                outcome = Outcome.NEUTRAL
                retry_after = served.family_resets_at - now
            elif served.retry_after is not None:
                outcome = Outcome.FAILURE
            else:
                outcome = Outcome.FABLE_FAILURE
            lease.release(outcome, retry_after=retry_after, status=429)
            self._retry(attempt, retry_after)
            return
        if lease.account.provider != route.provider:
            self.result.spilled += 1
        self.result.served += 1
        self._settle(turn, lease, now, served.total_input, served.cached_tokens)
        self._push(now + turn.duration, _DONE, lease)

    def _retry(self, attempt: _Attempt, retry_after: float | None) -> None:
        if attempt.tries >= MAX_ATTEMPTS:
            self.result.given_up += 1
            return
        low, high = RETRY_BOUNDS
        wait = min(high, max(low, retry_after if retry_after is not None else low))
        self._push(self.clock.now() + wait, _ARRIVE, attempt)

    def _turn_away(self, turn: Turn, now: float) -> None:
        windows = ("five_hour", "seven_day", "fable") if turn.fable else ("five_hour", "seven_day")
        for name in windows:
            self._turned_away[name] = now

    def _settle(self, turn: Turn, lease: Lease, now: float, total: int, cached: int) -> None:
        """Remember the turn; count it when it broke a warm cache by moving."""
        memory = self.pool.scheduler.conversations if turn.keyed else self._keyless
        model = route_of(turn).upstream_model  # as the relay keys it
        previous = memory.previous(GROUP, turn.stream, model)
        this = cache_miss.Turn(lease.account.id, now, total, cached)
        # The simulated client writes its whole prompt to the cache every turn (as Claude Code
        # does), so all of it is warm when the answer ends.
        miss = memory.settle(
            GROUP, turn.stream, this, ended_at=now + turn.duration, warm_tokens=total, model=model
        )
        if is_cache_break(previous, this, miss):
            self.result.cache_breaks += 1
            self.result.reread_tokens += miss.reread_tokens

    # --- what the service does around the pool -----------------------------------------------

    def _poll_stale(self, now: float) -> None:
        """Traffic refreshes stale or cold gauges, one poll per account per 5 minutes."""
        for account_id, state in self.pool.accounts.items():
            if now - self._polled.get(account_id, -POLL_FLOOR_SECONDS) < POLL_FLOOR_SECONDS:
                continue
            upstream = self.upstream[account_id]
            if not state.gauges.any_stale(now, tuple(upstream.windows)):
                continue
            self._polled[account_id] = now
            upstream.roll(now)
            for name, window in upstream.windows.items():
                state.gauges.apply(
                    Observation(name, window.utilization, window.resets_at, now, "poll")
                )

    def _sample(self) -> None:
        now = self.clock.now()
        self.result.samples.append(
            Sample(now, {a.name: a.utilization(now) for a in self.upstream.values()})
        )

    def _finish(self) -> None:
        now = self.clock.now()
        for account in self.upstream.values():
            account.roll(now)
        ledger = window_ledger(self.upstream, self._turned_away)
        # The week figures: Anthropic's and Codex's 7-day windows (and the Fable buckets).
        # Antigravity's family windows last ~5 h and are in the ledger, not in these shares.
        windows: tuple[str, ...] = ("seven_day",)
        if any(t.fable for t in self.trace.turns):
            windows += ("fable",)
        used, wasted, left = quota_fractions(ledger, windows)
        self.result.ledger = ledger
        self.result.quota_used, self.result.quota_wasted, self.result.quota_left = (
            used,
            wasted,
            left,
        )


def simulate(
    trace: Trace, policies: Iterable[str], accounts_for: Any, *, max_concurrency: int = 2
) -> list[RunResult]:
    """One run per policy, each on fresh accounts from `accounts_for()` (same seed, same start)."""
    return [
        Simulation(trace, policy, accounts_for(), max_concurrency=max_concurrency).run()
        for policy in policies
    ]
