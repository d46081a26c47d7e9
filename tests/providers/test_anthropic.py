"""providers/anthropic.py as pure functions: the model-list call and error bodies."""

from __future__ import annotations

import pytest

from sublane_desktop.providers import anthropic


def test_model_discovery_uses_the_accounts_credential_and_version():
    url, headers = anthropic.models_call("https://api.anthropic.com/", {"api_key": "sk-ant-1"})
    assert url == "https://api.anthropic.com/v1/models?limit=1000"
    assert headers == {"anthropic-version": anthropic.API_VERSION, "x-api-key": "sk-ant-1"}
    _, oauth = anthropic.models_call("https://gw", {"access_token": "sk-ant-oat01-x"})
    assert oauth["authorization"] == "Bearer sk-ant-oat01-x"
    assert oauth["anthropic-beta"] == anthropic.OAUTH_BETA and "content-type" not in oauth


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
            "overloaded_error",
        ),
        (b'{"error":{"type":"' + b"x" * 100 + b'"}}', "x" * 64),  # bounded
        (b'{"error":{"message":"no type"}}', None),
        (b'{"error":"flat"}', None),
        (b"[]", None),
        (b"<html>", None),
    ],
)
def test_an_error_body_gives_its_type_or_nothing(body, kind):
    assert anthropic.error_type_of(body) == kind
