"""Telling Claude Code from other clients, and which accounts serve which (SPEC R-WF-2)."""

import pytest

from sublane_desktop.core.clients import (
    claude_code_only_message,
    client_refusal,
    is_claude_code,
    serves_client,
)

CLI = "claude-cli/2.1.197 (external, cli)"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"user-agent": CLI, "x-app": "cli"}, True),
        ({"User-Agent": "claude-cli/2.1.197 (external, sdk-py)", "X-App": "cli"}, True),
        ({"user-agent": "Claude-CLI/3.0.0", "x-app": " CLI "}, True),  # names and case as sent
        ({"user-agent": CLI}, False),  # one mark is not Claude Code
        ({"x-app": "cli"}, False),
        ({"user-agent": "Anthropic/Python 0.94.0", "x-app": "cli"}, False),
        ({"user-agent": "claude-cli", "x-app": "cli"}, False),  # no version: not its agent
        ({"user-agent": "my-claude-cli/1.0", "x-app": "cli"}, False),
        ({"user-agent": CLI, "x-app": "desktop"}, False),
        ({}, False),
    ],
)
def test_claude_code_is_told_by_its_agent_and_app_header(headers, expected):
    assert is_claude_code(headers) is expected


def test_a_subscription_login_serves_claude_code_only_every_other_account_serves_all():
    assert serves_client("anthropic", "oauth", claude_code=True)
    assert not serves_client("anthropic", "oauth", claude_code=False)
    assert serves_client("anthropic", "api_key", claude_code=False)
    for provider in ("codex", "antigravity"):
        assert serves_client(provider, "oauth", claude_code=False)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "This credential is only authorized for use with Claude Code and cannot be used"
            " for other API requests.",
            "claude_code_only",
        ),
        (
            "Third-party apps now draw from your extra usage, not your plan limits.",
            "third_party_extra_usage",
        ),
        ("Overloaded", None),
        ("", None),
        (None, None),
    ],
)
def test_the_upstreams_refusals_of_a_client_are_recognised_in_its_words(message, code):
    assert client_refusal(message) == code


def test_the_refusal_names_the_logins_and_what_would_serve_the_client():
    text = claude_code_only_message(["work-max", "home-pro", "lab", "spare"])
    assert "(work-max, home-pro, lab …)" in text and "spare" not in text
    assert "(work-max, home-pro, lab)" in claude_code_only_message(["work-max", "home-pro", "lab"])
    assert "(work-max)" in claude_code_only_message(["work-max"])
    assert "Claude Code only" in text and "this client is not Claude Code" in text
    assert "sublane account add --provider anthropic" in text and "Antigravity" in text
