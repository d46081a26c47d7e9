"""Model discovery's memory (R-AG-5): ten minutes, a static fallback, no shrinking on failure."""

from __future__ import annotations

from sublane_desktop.core.catalog import (
    CACHE_SECONDS,
    RETRY_AFTER_FAILURE_SECONDS,
    STATIC_MODELS,
    ModelCatalog,
)
from sublane_desktop.core.clock import FakeClock


def test_an_upstream_answer_is_kept_for_ten_minutes_then_asked_again():
    clock = FakeClock()
    catalog = ModelCatalog(clock)
    assert catalog.due("anthropic")
    catalog.learn("anthropic", ["claude-new-9", "claude-new-9", "claude-old-1"])
    assert catalog.models("anthropic") == ("claude-new-9", "claude-old-1")
    clock.advance(CACHE_SECONDS - 1)
    assert not catalog.due("anthropic")
    clock.advance(1)
    assert catalog.due("anthropic")


def test_no_answer_falls_back_to_the_static_menu_and_retries_after_a_minute():
    clock = FakeClock()
    catalog = ModelCatalog(clock)
    assert catalog.models("codex") == STATIC_MODELS["codex"]  # before anything was asked
    catalog.learn("codex", None)
    assert catalog.models("codex") == STATIC_MODELS["codex"]
    clock.advance(RETRY_AFTER_FAILURE_SECONDS - 1)
    assert not catalog.due("codex")
    clock.advance(1)
    assert catalog.due("codex")
    catalog.learn("codex", [])  # an empty list is no answer either
    assert catalog.models("codex") == STATIC_MODELS["codex"]


def test_a_failed_refresh_keeps_the_last_good_answer_and_retries_after_a_minute():
    clock = FakeClock()
    catalog = ModelCatalog(clock)
    catalog.learn("anthropic", ["claude-new-9"])
    clock.advance(CACHE_SECONDS)
    catalog.learn("anthropic", None)
    assert catalog.models("anthropic") == ("claude-new-9",)
    clock.advance(RETRY_AFTER_FAILURE_SECONDS - 1)
    assert not catalog.due("anthropic")
    clock.advance(1)
    assert catalog.due("anthropic")


def test_forget_makes_every_provider_due():
    clock = FakeClock()
    catalog = ModelCatalog(clock)
    catalog.learn("anthropic", ["a"])
    catalog.forget()
    assert catalog.due("anthropic") and catalog.models("anthropic") == STATIC_MODELS["anthropic"]


def test_model_ids_reads_every_known_list_shape_and_nothing_else():
    from sublane_desktop.core.catalog import model_ids

    assert model_ids({"data": [{"id": "claude-x"}, {"id": ""}, {"nope": 1}, "str"]}) == ["claude-x"]
    assert model_ids({"models": [{"slug": "gpt-x"}, {"id": "gpt-y"}]}) == ["gpt-x", "gpt-y"]
    assert model_ids({"models": {"gemini-3-pro-high": {}, "": {}}}) == ["gemini-3-pro-high"]
    for junk in (None, [], "x", {"data": "x"}, {"models": 3}, {}):
        assert model_ids(junk) == []


def test_an_unknown_provider_lists_nothing_and_odd_ids_are_dropped():
    catalog = ModelCatalog(FakeClock())
    assert catalog.models("someday") == ()
    catalog.learn("someday", None)
    assert catalog.models("someday") == ()
    catalog.learn("codex", ["gpt-5.4", "", 5, None, "gpt-5.4", "gpt-5"])
    assert catalog.models("codex") == ("gpt-5.4", "gpt-5")
