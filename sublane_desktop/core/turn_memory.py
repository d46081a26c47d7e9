"""Each conversation's last turn per model, remembered for the cache-miss rule (R-CF-1).

The memory is keyed like the affinity table — (group id, conversation digest) — and holds only
numbers and model names: per model, which account served the conversation's last turn on it,
when that turn ended, its total input and the input it left warm. `settle` is called once when
a bound attempt ends with usage counts: it classifies the turn against the remembered one
(core.cache_miss), then remembers this turn instead and hands the conversation's facts to `save`
(the service writes them beside the binding, so a restart keeps them). It outlives the binding
itself: a conversation freed by a pause is exactly the one whose next turn needs explaining.

Why per model: a provider caches a prompt for one model only, and one conversation mixes
models — Claude Code sends small Haiku requests (titles, command checks) in the same session as
its main model's turns. Compared with each other, the Haiku request would read as a changed
prefix, and the main model's next miss would be measured against the Haiku request's input.
So a turn is compared with the conversation's last turn *on the same model*; a model's first
turn in a conversation is its `first_turn`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

from sublane_desktop.core.cache_miss import CacheMiss, PreviousTurn, Turn, classify_turn

Key = tuple[int, str]
Turns = dict[str, PreviousTurn]  # model -> that model's last turn in the conversation
Save = Callable[[int, str, Turns], None]
# Bounded so a long-running proxy cannot grow without end; the oldest conversations go first,
# and a forgotten one only reads `first_turn` on its next turn.
CAPACITY = 20_000
# Models remembered per conversation (the most recently used); real sessions use two or three.
MODELS_PER_CONVERSATION = 8
MODEL_KEY_MAX = 128  # as records bound a model name


class TurnMemory:
    def __init__(self, save: Save | None = None, capacity: int = CAPACITY) -> None:
        self._turns: OrderedDict[Key, Turns] = OrderedDict()
        self._save = save or (lambda group_id, digest, turns: None)
        self.capacity = capacity

    def load(self, turns: Mapping[Key, Mapping[str, PreviousTurn]]) -> None:
        def last_end(item: tuple[Key, Mapping[str, PreviousTurn]]) -> float:
            return max((t.ended_at for t in item[1].values()), default=0.0)

        ordered = sorted(((k, v) for k, v in turns.items() if v), key=last_end)
        self._turns = OrderedDict((key, dict(models)) for key, models in ordered[-self.capacity :])

    def previous(self, group_id: int, digest: str, model: str | None = None) -> PreviousTurn | None:
        """The conversation's last turn on `model`; without one, its latest turn on any."""
        models = self._turns.get((group_id, digest), {})
        if model is None:
            return max(models.values(), key=lambda t: t.ended_at, default=None)
        return models.get(model[:MODEL_KEY_MAX])

    def settle(
        self,
        group_id: int,
        digest: str,
        turn: Turn,
        *,
        ended_at: float,
        warm_tokens: int,
        model: str = "",
    ) -> CacheMiss:
        """Classify this turn, then remember it as the conversation's last turn on `model`
        (callers that model one prompt per conversation, like the simulator, leave it out)."""
        model = model[:MODEL_KEY_MAX]
        key = (group_id, digest)
        models = self._turns.get(key, {})
        verdict = classify_turn(models.get(model), turn)
        models.pop(model, None)  # re-inserted last: the dict's order is least recently used
        models[model] = PreviousTurn(
            account_id=turn.account_id,
            ended_at=ended_at,
            input_tokens=turn.input_tokens,
            warm_tokens=warm_tokens,
        )
        while len(models) > MODELS_PER_CONVERSATION:
            del models[next(iter(models))]
        self._turns[key] = models
        self._turns.move_to_end(key)
        while len(self._turns) > self.capacity:
            self._turns.popitem(last=False)
        self._save(group_id, digest, dict(models))
        return verdict

    def active(self, now: float, within: float) -> dict[int, int]:
        """Conversations per account whose last turn ended less than `within` seconds ago
        (still going: the cost_aware scheduling mode spreads new ones by this)."""
        counts: dict[int, int] = {}
        for models in reversed(self._turns.values()):  # newest settled first
            facts = max(models.values(), key=lambda t: t.ended_at)  # its latest, any model
            age = now - facts.ended_at
            if age >= 2 * within:
                break  # settled long ago: nothing older can still be going
            if age < within:
                counts[facts.account_id] = counts.get(facts.account_id, 0) + 1
        return counts

    def __len__(self) -> int:
        return len(self._turns)
