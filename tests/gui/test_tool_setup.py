import ast
import json
import secrets
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
    assert lines["anthropic (Python)"].endswith(
        'client = anthropic.Anthropic(\n    base_url="http://127.0.0.1:8765",\n'
        '    api_key="sl-abc",\n)'
    )
    assert lines["openai (Python)"].endswith(
        'client = OpenAI(\n    base_url="http://127.0.0.1:8765/v1",\n    api_key="sl-abc",\n)'
    )
    for title in ("anthropic (Python)", "openai (Python)"):
        ast.parse(lines[title])  # pasted as shown, it runs


def test_no_line_of_set_up_a_tool_wraps_inside_a_string(qtbot, service):
    """Fault 17: with a real key, every line of every tool fits the dialog at its default size,
    so nothing wraps in the middle of a quoted URL or key."""
    from sublane_desktop.gui.bridge import Bridge
    from sublane_desktop.gui.dialogs.setup_tool import SetupToolDialog

    dialog = SetupToolDialog(Bridge(service))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    key = "sl-" + secrets.token_urlsafe(32)  # as long as the keys SubLane makes
    for index, page in enumerate(dialog.pages.values()):
        dialog.tabs.setCurrentIndex(index)
        page.use_key(key, "")
        for view in page.views:
            text = view.toPlainText()
            wrapped = view.document().documentLayout().documentSize().height()
            assert wrapped == text.count("\n") + 1, (page.tool.id, text)


@pytest.mark.parametrize("tool", [t.id for t in TOOLS])
def test_placeholder_until_a_key_exists(tool):
    assert all(
        KEY_PLACEHOLDER in s.text or "SUBLANE_KEY" in s.text for s in snippets(tool, URL, None)
    )
    with pytest.raises(ValueError):
        snippets("emacs", URL, None)
