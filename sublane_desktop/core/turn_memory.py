"""Each conversation's last turn, remembered for the cache-miss rule (R-CF-1).

The memory is keyed like the affinity table — (group id, conversation digest) — and holds only
numbers: which account served the last turn, when it ended, its total input and the input it
left warm. `settle` is called once when a bound attempt ends with usage counts: it classifies
the turn against the remembered one (core.cache_miss), then remembers this turn instead and
hands the facts to `save` (the service writes them beside the binding, so a restart keeps them).
It outlives the binding itself: a conversation freed by a pause is exactly the one whose next
turn needs explaining.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

from sublane_desktop.core.cache_miss import CacheMiss, PreviousTurn, Turn, classify_turn

Key = tuple[int, str]
Save = Callable[[int, str, PreviousTurn], None]
# Bounded so a long-running proxy cannot grow without end; the oldest conversations go first,
# and a forgotten one only reads `first_turn` on its next turn.
CAPACITY = 20_000


class TurnMemory:
    def __init__(self, save: Save | None = None, capacity: int = CAPACITY) -> None:
        self._turns: OrderedDict[Key, PreviousTurn] = OrderedDict()
        self._save = save or (lambda group_id, digest, facts: None)
        self.capacity = capacity

    def load(self, turns: Mapping[Key, PreviousTurn]) -> None:
        ordered = sorted(turns.items(), key=lambda item: item[1].ended_at)
        self._turns = OrderedDict(ordered[-self.capacity:])

    def previous(self, group_id: int, digest: str) -> PreviousTurn | None:
        return self._turns.get((group_id, digest))

    def settle(self, group_id: int, digest: str, turn: Turn, *, ended_at: float,
               warm_tokens: int) -> CacheMiss:
        """Classify this turn, then remember it as the conversation's last turn."""
        key = (group_id, digest)
        verdict = classify_turn(self._turns.get(key), turn)
        facts = PreviousTurn(account_id=turn.account_id, ended_at=ended_at,
                             input_tokens=turn.input_tokens, warm_tokens=warm_tokens)
        self._turns[key] = facts
        self._turns.move_to_end(key)
        while len(self._turns) > self.capacity:
            self._turns.popitem(last=False)
        self._save(group_id, digest, facts)
        return verdict

    def active(self, now: float, within: float) -> dict[int, int]:
        """Conversations per account whose last turn ended less than `within` seconds ago
        (still going: the cost_aware scheduling mode spreads new ones by this)."""
        counts: dict[int, int] = {}
        for facts in reversed(self._turns.values()):  # newest settled first
            age = now - facts.ended_at
            if age >= 2 * within:
                break  # settled long ago: nothing older can still be going
            if age < within:
                counts[facts.account_id] = counts.get(facts.account_id, 0) + 1
        return counts

    def __len__(self) -> int:
        return len(self._turns)
