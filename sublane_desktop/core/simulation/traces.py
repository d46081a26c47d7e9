"""Traffic traces (R-SIM-2): seeded generators, and a trace rebuilt from request records.

A trace is a fixed list of turns (model requests) in time order, the same for every policy, so
policies are compared on the same demand. A turn belongs to a *stream*: a conversation (it
carries a conversation key, so the pool binds it) or a keyless job whose requests share a
prompt prefix (independent selection; only the lane's anchor keeps its cache warm).

Conversations look like Claude Code sessions: a system prompt and tools of 12k-24k tokens,
each turn adding its tool results and the previous answer to the prefix, mostly quick agentic
turns (seconds apart), some human pauses, a few long breaks that let the cache expire, and a
new session when the context nears its limit.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sublane_desktop.core.routing import is_fable_model, route_model

H = 3600.0
DAY = 86400.0
# A Monday 00:00 UTC, so "working hours" and weekends fall where people expect them.
EPOCH = 1_799_625_600.0
CONTEXT_LIMIT = 160_000  # tokens; past this a person starts a new session
RECORD_GAP = 30 * 60.0  # from records: a key silent this long starts a new conversation


@dataclass(frozen=True)
class Turn:
    at: float  # unix seconds
    stream: str
    keyed: bool  # carries a conversation key (bound by the pool) or not (independent)
    fable: bool
    prefix_tokens: int  # input earlier turns already sent (what a warm cache serves)
    new_tokens: int  # input new in this turn
    output_tokens: int
    duration: float  # seconds the upstream takes to answer
    # The model the client asked for (a recorded trace keeps each record's); "" for the
    # generators' Claude model of the turn's lane.
    model: str = ""


@dataclass(frozen=True)
class Trace:
    name: str
    seed: int
    start: float
    end: float
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Person:
    tz: float  # hours from UTC
    start_h: float  # local working hours
    end_h: float
    fable_share: float = 0.0
    weekend: float = 0.2  # chance of a short weekend session block
    parallel: float = 0.2  # chance a session runs a second one alongside (a subagent, a tab)


class _Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.turns: list[Turn] = []
        self.streams = 0

    def conversation(self, at: float, fable: bool, *, quick: float = 0.85) -> float:
        """One session from `at`; returns when its last turn ends."""
        rng = self.rng
        self.streams += 1
        stream = f"c{self.streams}"
        prefix = rng.randint(12_000, 24_000)
        turns = max(2, int(rng.expovariate(1 / 30)))
        t = at
        for _ in range(turns):
            new = int(min(30_000, rng.lognormvariate(7.2, 1.0)))  # tool results, ~2k
            out = int(min(8_000, rng.lognormvariate(5.8, 0.8)))  # ~450
            duration = 2.0 + out / 60.0
            self.turns.append(Turn(t, stream, True, fable, prefix, new, out, duration))
            prefix += new + out
            t += duration
            if prefix > CONTEXT_LIMIT:
                break
            roll = rng.random()
            if roll < quick:
                t += rng.uniform(1, 8)  # the tool runs, the agent goes on
            elif roll < 0.98:
                t += rng.uniform(20, 180)  # the person reads and answers
            else:
                t += rng.uniform(360, 1800)  # a break: the cache expires
        return t

    def job(self, at: float, requests: int, prefix: int, spacing: tuple[float, float]) -> None:
        """A keyless batch job: independent requests sharing one prompt prefix."""
        self.streams += 1
        stream = f"j{self.streams}"
        t = at
        for _ in range(requests):
            out = int(self.rng.lognormvariate(5.0, 0.6))
            duration = 1.0 + out / 60.0
            self.turns.append(
                Turn(t, stream, False, False, prefix, self.rng.randint(300, 3000), out, duration)
            )
            t += duration + self.rng.uniform(*spacing)

    def workday(self, person: Person, day_start: float, hours: tuple[float, float]) -> None:
        rng = self.rng
        t = day_start + (hours[0] - person.tz) * H + rng.uniform(-0.5, 0.5) * H
        end = day_start + (hours[1] - person.tz) * H + rng.uniform(-0.5, 0.5) * H
        lunch = day_start + (12.5 - person.tz) * H
        while t < end:
            fable = rng.random() < person.fable_share
            if rng.random() < person.parallel:
                self.conversation(t + rng.uniform(5, 60), rng.random() < person.fable_share)
            t = self.conversation(t, fable) + rng.uniform(120, 900)
            if lunch <= t < lunch + H:
                t = lunch + H

    def person(self, person: Person, start: float, days: float) -> None:
        for day in range(int(days + 0.999)):
            day_start = start + day * DAY
            if day % 7 < 5:
                self.workday(person, day_start, (person.start_h, person.end_h))
            elif self.rng.random() < person.weekend:
                begin = self.rng.uniform(10, 18)
                self.workday(person, day_start, (begin, begin + 2))

    def trace(self, name: str, seed: int, start: float, days: float) -> Trace:
        end = start + days * DAY
        turns = sorted(
            (t for t in self.turns if start <= t.at < end), key=lambda t: (t.at, t.stream)
        )
        return Trace(name, seed, start, end, tuple(turns))


def solo(b: _Builder, start: float, days: float) -> None:
    """One person, long days, some evenings and weekends."""
    b.person(Person(tz=0, start_h=8.5, end_h=19.5, weekend=0.6, parallel=0.35), start, days)
    for day in range(int(days)):
        if b.rng.random() < 0.5:
            b.workday(Person(tz=0, start_h=21, end_h=23), start + day * DAY, (21, 23))


def team(b: _Builder, start: float, days: float) -> None:
    """Five people in two time zones (three in UTC+1, two in UTC-5), and a nightly CI job."""
    for tz in (1, 1, 1, -5, -5):
        b.person(Person(tz=tz, start_h=8.5, end_h=18.5, parallel=0.6), start, days)
    for day in range(int(days)):
        if day % 7 < 5:
            b.job(start + day * DAY + 2 * H, 120, 6_000, (5, 20))


def bursty(b: _Builder, start: float, days: float) -> None:
    """Two light users, and bursts: agent swarms of parallel sessions, keyless batch runs."""
    for tz in (0, 0):
        b.person(Person(tz=tz, start_h=10, end_h=16, parallel=0.1), start, days)
    for day in range(int(days)):
        for _ in range(b.rng.randint(1, 3)):
            at = start + day * DAY + b.rng.uniform(8, 20) * H
            for _ in range(6):  # a swarm of subagents, quick turns
                b.conversation(at + b.rng.uniform(0, 120), False, quick=0.97)
        for _ in range(2):
            b.job(start + day * DAY + b.rng.uniform(0, 24) * H, 200, 8_000, (1, 6))


def fable_heavy(b: _Builder, start: float, days: float) -> None:
    """Three people, two time zones, most sessions on the Fable model."""
    for tz in (0, 0, -8):
        b.person(Person(tz=tz, start_h=9, end_h=18, fable_share=0.5), start, days)


GENERATORS: dict[str, Callable[[_Builder, float, float], None]] = {
    "solo": solo,
    "team": team,
    "bursty": bursty,
    "fable-heavy": fable_heavy,
}
TRACES = tuple(GENERATORS)


def generate(name: str, seed: int = 1, days: float = 7.0, start: float = EPOCH) -> Trace:
    if name not in GENERATORS:
        raise ValueError(f"unknown trace {name!r}; choose from {', '.join(TRACES)}")
    if not days > 0:
        raise ValueError("days must be positive")
    # A string seed is hashed the same way in every process (unlike hash()), so same seed,
    # same trace.
    builder = _Builder(random.Random(f"{name}:{seed}"))
    GENERATORS[name](builder, start, days)
    return builder.trace(name, seed, start, days)


# A recorded request for a model no route knows is replayed as its provider's usual model.
RECORD_MODELS = {"anthropic": "", "codex": "gpt-5", "antigravity": "gemini-2.5-pro"}
NOT_TURNS = ("count_tokens",)  # operations that ask the upstream nothing of a conversation


def _record_model(row: Mapping[str, Any]) -> str:
    """The model to ask for, on the record's provider: a Claude model an Antigravity account
    served (a spill, or asked for by name) is asked of Antigravity by name again."""
    model = str(row.get("model") or "")
    provider = str(row.get("provider") or "")
    route = route_model(model)
    if route is None:
        return RECORD_MODELS.get(provider, "")
    if provider in RECORD_MODELS and provider != route.provider:
        return f"{provider}/{model}"
    return model


def from_records(rows: Iterable[Mapping[str, Any]], seed: int = 1) -> Trace:
    """A trace from stored request records (oldest first), which hold no conversation ids.

    A client key's requests to one provider form one conversation until the key falls silent
    for RECORD_GAP; a turn's prefix is what the previous turn of that conversation sent and
    received, capped at what this turn sent in all (records store the total input, cache reads
    included). Each record keeps its model and provider, so a Codex or Gemini record is
    replayed as a request to that provider, not as a Claude turn, and a Claude record that an
    Antigravity account served is asked of Antigravity again.

    An attempt the pool rejected, or one that carries no tokens (a 429, an error before the
    answer), is not a turn: it is an attempt of the key's next turn, which then arrives when the first
    attempt did (the simulator's client retries it as the real one did). One that no later
    attempt carried is a turn given up: it is replayed as re-sending its conversation's prefix,
    or dropped when no earlier turn says how big that was.
    """
    turns: list[Turn] = []
    last: dict[Any, tuple[str, float, int]] = {}  # conversation -> stream, ended at, prompt+answer
    waiting: dict[Any, tuple[float, str]] = {}  # conversation -> first tokenless attempt, model
    count = 0

    def given_up(key: Any) -> None:
        at, model = waiting.pop(key)
        previous = last.get(key)
        if previous is not None and at - previous[1] <= RECORD_GAP:
            turns.append(
                Turn(at, previous[0], True, is_fable_model(model), previous[2], 0, 0, 1.0, model)
            )

    for row in sorted(rows, key=lambda r: (r["started_at"], r.get("id") or 0)):
        if row.get("operation") in NOT_TURNS:
            continue
        at = float(row["started_at"])
        model = _record_model(row)
        route = route_model(model) if model else None
        key = (row.get("key_id"), route.provider if route is not None else "anthropic")
        total = int(row.get("input_tokens") or 0)
        pending = waiting.get(key)
        if pending is not None and at - pending[0] > RECORD_GAP:
            given_up(key)
            pending = None
        if total <= 0 or row.get("outcome") == "rejected":
            if pending is None:
                waiting[key] = (at, model)
            continue
        if pending is not None:
            del waiting[key]
            at = pending[0]  # the turn began with its first attempt
        out = int(row.get("output_tokens") or 0)
        duration = max(0.5, (row.get("duration_ms") or 5000) / 1000.0)
        previous = last.get(key)
        if previous is None or at - previous[1] > RECORD_GAP:
            count += 1
            stream, prefix = f"r{count}", 0
        else:
            stream, prefix = previous[0], min(previous[2], total)
        turns.append(
            Turn(
                at,
                stream,
                True,
                is_fable_model(model),
                prefix,
                total - prefix,
                out,
                duration,
                model,
            )
        )
        last[key] = (stream, at + duration, total + out)
    for key in list(waiting):
        given_up(key)
    if not turns:
        raise ValueError("there are no request records to replay")
    turns.sort(key=lambda t: (t.at, t.stream))
    start = turns[0].at
    end = max(t.at + t.duration for t in turns) + 1.0
    return Trace("records", seed, start, end, tuple(turns))
