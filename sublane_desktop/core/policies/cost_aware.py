"""The `cost_aware` scheduling mode (R-SIM-4): placement and moves that price a broken cache.

What it decides, on top of the scheduler's own gates (which it never relaxes):

1. Hard gates and capacity are the scheduler's: a gated or full account never serves.
2. A live manual pin wins: new conversations go to it, and nothing moves away from it.
3. A new conversation has no warm cache anywhere, so perishability alone decides: it rotates
   among the admissible accounts whose score (the main lane's ramp, the Fable lane's urgency) is
   within SWITCH_MARGIN of the best, instead of among all of them.
4. A bound conversation is stranded on an account that is gated, busy while its cache is cold,
   or about to hit a limit: it moves to the best admissible account. "About to" is the
   preemptive ceiling for a warm conversation and NEAR_LIMIT below it for a cold one, so cold
   conversations leave first and warm ones keep their cache until the last safe moment.
5. Otherwise a move must pay: the target's score must beat the bound account's by SWITCH_MARGIN
   plus the price of what the move re-reads (prefix tokens x the chance the cache is still warm,
   in units of PREFIX_PRICE_TOKENS).

This mode departs from R-POOL-4 on purpose ("a bound conversation never moves by itself"): that
rule is what `score` and `round_robin` keep, and what the simulator measures against. Nothing
here awaits; the pool calls it inside its atomic select-and-reserve step. Independent requests
(no conversation) follow the `score` policy's anchor.
"""

from __future__ import annotations

from sublane_desktop.core.account_state import AccountState, Demand
from sublane_desktop.core.cache_miss import DEFAULT_TTL, PreviousTurn
from sublane_desktop.core.policies.base import SWITCH_MARGIN, Gates
from sublane_desktop.core.policies.seeds import Score

CACHE_TTL = DEFAULT_TTL  # the prompt cache's default lifetime after the last use (5 min)
# A window this close below its ceiling is "about to hit a limit" for a cold conversation; it
# costs a cold conversation nothing to leave, and leaving early spares the warm ones a move.
NEAR_LIMIT = 0.10
# Each warm prefix of this many tokens raises the bar for a move by one more SWITCH_MARGIN.
# Re-reading 10k tokens at full price instead of from cache costs ~9k quota units, about one
# average agentic turn; so a warm 100k-token conversation moves for perishability only when the
# target scores >11x better, i.e. in practice warm conversations move only to avoid a limit,
# cold ones whenever the gain clears the margin (measured: 10k beat 30k and 100k on every
# built-in trace when it was chosen; docs/simulator.md has the current comparison).
PREFIX_PRICE_TOKENS = 10_000
# What a conversation we know nothing about is assumed to carry (warm, typical size): moving
# blind is the costly mistake.
UNKNOWN_PREFIX_TOKENS = 50_000


def warm_chance(facts: PreviousTurn | None, account_id: int, now: float) -> float:
    """The chance the conversation's prefix is still cached on `account_id`: the last turn
    (core.turn_memory, the same facts the cache-miss rule reads) ended there within the TTL."""
    if facts is None:
        return 1.0
    if facts.account_id != account_id or facts.warm_tokens <= 0:
        return 0.0
    return 1.0 if now - facts.ended_at <= CACHE_TTL else 0.0


def prefix_tokens(facts: PreviousTurn | None) -> int:
    """What a move would read again: the input the last turn left warm."""
    return UNKNOWN_PREFIX_TOKENS if facts is None else facts.warm_tokens


def near_limit(
    gates: Gates, account: AccountState, demand: Demand, now: float, below: float
) -> bool:
    """A window the request uses is within `below` of its ceiling (last reading)."""
    ceilings = gates.ceilings_for(account)
    gauges = account.gauges
    limits = [
        (gauges.five_hour, ceilings.five_hour_max),
        (gauges.seven_day, ceilings.seven_day_max),
    ]
    if demand.route.fable:
        limits.append((gauges.fable, ceilings.fable_weekly_max))
    for gauge, ceiling in limits:
        reading = gauge.reading(now)
        if reading is not None and reading >= ceiling - below:
            return True
    return False


def place(
    gates: Gates, ordered: list[AccountState], demand: Demand, start: int, now: float
) -> AccountState | None:
    """3. A new conversation: the next account in rotation among those that score within
    SWITCH_MARGIN of the best, or None when no account is admissible.

    Among near-equals the account with the fewest running conversations per slot wins, then
    the rotation order: conversations (and their concurrency) spread as the seed's rotation
    spreads them; an account far ahead on perishability takes them all until it is not.
    Accounts over a preemptive ceiling are used only when every admissible one is (placement
    steers, it does not refuse). `start` is the group's rotation cursor.
    """
    n = len(ordered)
    admissible = [a for a in ordered if gates.admissible(a, demand, now)]
    steered = [a for a in admissible if demand.route.fable or not gates.over_ceiling(a, now)]
    choices = steered or admissible
    if not choices:
        return None
    # An account already running a conversation per slot would make the next one wait (a bound
    # conversation cannot spill), so accounts with a free slot come first.
    active = gates.conversations.active(now, CACHE_TTL)
    free = [a for a in choices if active.get(a.id, 0) < a.max_concurrency]
    choices = free or choices
    scores = {a.id: gates.score(a, demand, now) for a in choices}
    bar = max(scores.values()) / (1.0 + SWITCH_MARGIN)
    near_best = [a for a in choices if scores[a.id] >= bar]
    return min(
        near_best,
        key=lambda a: (active.get(a.id, 0) / a.max_concurrency, (ordered.index(a) - start) % n),
    )


def move_target(
    gates: Gates,
    bound: AccountState,
    candidates: list[AccountState],
    demand: Demand,
    facts: PreviousTurn | None,
    now: float,
) -> AccountState | None:
    """4./5. Where a bound conversation should go instead of `bound`, or None to stay."""
    if gates.pinned(bound, now):
        return None  # 2. the pin holds its conversations whatever the scores say
    others = [
        a
        for a in sorted(candidates, key=lambda a: a.id)
        if a is not bound and gates.admissible(a, demand, now)
    ]
    pinned = [a for a in others if gates.pinned(a, now)]
    if pinned:
        targets = pinned
    else:
        targets = [a for a in others if demand.route.fable or not gates.over_ceiling(a, now)]
        targets = [a for a in targets if not near_limit(gates, a, demand, now, 0.0)]
    if not targets:
        return None
    best = max(targets, key=lambda a: (gates.score(a, demand, now), -a.id))
    if pinned:
        return best  # a switch sends every conversation of the provider to the pinned account
    warm = warm_chance(facts, bound.id, now)
    if gates.hard_gate(bound, demand, now) is not None:
        return best
    if warm == 0.0 and not gates.has_room(bound, now):
        return best
    if near_limit(gates, bound, demand, now, 0.0 if warm > 0.0 else NEAR_LIMIT):
        return best
    price = warm * prefix_tokens(facts) / PREFIX_PRICE_TOKENS
    if gates.score(best, demand, now) > gates.score(bound, demand, now) * (
        1.0 + SWITCH_MARGIN + price
    ):
        return best
    return None


class CostAware(Score):
    """Independent requests follow `score`'s anchor (inherited); conversations are its own."""

    name = "cost_aware"
    moves_conversations = True

    def place(
        self, gates: Gates, ordered: list[AccountState], demand: Demand, start: int, now: float
    ) -> tuple[AccountState, str] | None:
        best = place(gates, ordered, demand, start, now)
        return None if best is None else (best, "best score (cost aware)")

    def move(
        self,
        gates: Gates,
        bound: AccountState,
        candidates: list[AccountState],
        demand: Demand,
        now: float,
    ) -> AccountState | None:
        assert demand.conversation is not None  # only bound conversations move
        facts = gates.conversations.previous(demand.group_id, demand.conversation)
        return move_target(gates, bound, candidates, demand, facts, now)
