import json
import tomllib

import pytest

from sublane_desktop.gui.tool_setup import KEY_PLACEHOLDER, TOOLS, snippets

URL = "http://127.0.0.1:8765"


def by_title(tool, key="sl-abc"):
    return {s.title: s.text for s in snippets(tool, URL, key)}


def test_claude_code_lines():
    lines = by_title("claude-code")
    assert lines["Shell (bash, zsh)"] == (
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:8765\nexport ANTHROPIC_AUTH_TOKEN=sl-abc\n"
        "export _CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1"  # R-WF-8
    )
    assert lines["fish"].endswith("\nset -gx _CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL 1")
    assert lines["PowerShell"].endswith('\n$env:_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL = "1"')
    settings = json.loads(lines["or in ~/.claude/settings.json"])
    assert settings["env"] == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8765",
        "ANTHROPIC_AUTH_TOKEN": "sl-abc",
        "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL": "1",
    }


def test_codex_config_is_valid_toml_as_protocols_md_says():
    lines = by_title("codex")
    config = tomllib.loads(next(t for title, t in lines.items() if "config.toml" in title))
    assert config["model_provider"] == "sublane"
    assert config["model_providers"]["sublane"] == {
        "name": "SubLane",
        "base_url": "http://127.0.0.1:8765/v1",
        "env_key": "SUBLANE_KEY",
        "wire_api": "responses",
    }
    assert lines["Shell (bash, zsh)"] == "export SUBLANE_KEY=sl-abc"


def test_sdk_lines():
    lines = by_title("sdk")
    assert (
        'anthropic.Anthropic(base_url="http://127.0.0.1:8765", api_key="sl-abc")'
        in lines["anthropic (Python)"]
    )
    assert (
        'OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="sl-abc")' in lines["openai (Python)"]
    )


@pytest.mark.parametrize("tool", [t.id for t in TOOLS])
def test_placeholder_until_a_key_exists(tool):
    assert all(
        KEY_PLACEHOLDER in s.text or "SUBLANE_KEY" in s.text for s in snippets(tool, URL, None)
    )
    with pytest.raises(ValueError):
        snippets("emacs", URL, None)
