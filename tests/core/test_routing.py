import pytest

from sublane_desktop.core.routing import is_fable_model, route_model


@pytest.mark.parametrize(
    "model, provider, upstream, explicit, long_ctx",
    [
        ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", False, False),
        ("claude-sonnet-4-5[1m]", "anthropic", "claude-sonnet-4-5", False, True),
        ("anthropic/claude-opus-4-1", "anthropic", "claude-opus-4-1", True, False),
        ("gpt-5-codex", "codex", "gpt-5-codex", False, False),
        ("codex-mini-latest", "codex", "codex-mini-latest", False, False),
        ("o3", "codex", "o3", False, False),
        ("o4-mini", "codex", "o4-mini", False, False),
        ("codex/gpt-5", "codex", "gpt-5", True, False),
        ("gemini-2.5-pro", "antigravity", "gemini-2.5-pro", False, False),
        ("antigravity/claude-sonnet-4-5", "antigravity", "claude-sonnet-4-5", True, False),
    ],
)
def test_routes(model, provider, upstream, explicit, long_ctx):
    route = route_model(model)
    assert route is not None
    assert (route.provider, route.upstream_model, route.explicit_provider, route.long_context) == (
        provider,
        upstream,
        explicit,
        long_ctx,
    )


@pytest.mark.parametrize(
    "model", ["", "llama-3", "omni", "other/claude-x", None, 42, "x" * 300, "anthropic/", "[1m]"]
)
def test_unknown_models_have_no_route(model):
    assert route_model(model) is None


@pytest.mark.parametrize(
    "model, fable",
    [
        ("claude-fable-5", True),
        ("claude-fable-5[1m]", True),
        ("anthropic/claude-fable-5", True),
        ("claude-sonnet-4-5", False),
        ("claude-fables-5", False),
        ("claude-unfable-1", False),
        ("fable", True),
    ],
)
def test_fable_family(model, fable):
    assert is_fable_model(model) is fable


@pytest.mark.parametrize(
    ("model", "provider", "upstream", "long_ctx"),
    [
        ("  claude-sonnet-4-5  ", "anthropic", "claude-sonnet-4-5", False),  # padding trimmed
        ("claude-sonnet-4-5[1M]", "anthropic", "claude-sonnet-4-5", True),  # case-insensitive
        ("claude-sonnet-4-5[200k]", "anthropic", "claude-sonnet-4-5", False),  # other suffixes
        ("claude-x[1m]-y", "anthropic", "claude-x[1m]-y", False),  # only a trailing suffix
        ("codex/o1", "codex", "o1", False),
        ("claude-" + "a" * 249, "anthropic", "claude-" + "a" * 249, False),  # 256 characters
    ],
)
def test_routes_at_the_edges(model, provider, upstream, long_ctx):
    route = route_model(model)
    assert (route.provider, route.upstream_model, route.long_context) == (
        provider,
        upstream,
        long_ctx,
    )


@pytest.mark.parametrize(
    "model",
    [
        "claude-" + "a" * 250,
        "otherclaude-x",
        "xgpt-5",
        "oo3",
        "o-mini",
        "mygemini-1",
        "gpt",
        "Claude-sonnet-4-5",
    ],
)
def test_near_misses_have_no_route(model):
    assert route_model(model) is None


@pytest.mark.parametrize(
    ("model", "spill"),
    [
        ("claude-sonnet-4-5", ("antigravity",)),  # Antigravity also serves Claude: the overflow
        ("anthropic/claude-sonnet-4-5", ()),  # an explicit provider means exactly that one
        ("claude-fable-5", ()),  # Fable is Anthropic's own
        ("gpt-5", ()),
        ("gemini-2.5-pro", ()),
    ],
)
def test_claude_requests_spill_to_antigravity_only_when_free_to(model, spill):
    assert route_model(model).spill == spill


def test_the_fable_flag_is_on_the_route():
    assert route_model("claude-fable-5[1m]").fable is True
    assert route_model("anthropic/claude-fable-5").fable is True
    assert route_model("claude-sonnet-4-5").fable is False


def test_only_the_first_slash_can_name_a_provider():
    route = route_model("anthropic/claude-x/y")
    assert (route.provider, route.upstream_model, route.explicit_provider) == (
        "anthropic",
        "claude-x/y",
        True,
    )
