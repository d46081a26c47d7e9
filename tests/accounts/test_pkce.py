"""The pure parts of browser sign-in (R-LOGIN-1): the PKCE pair, the state, the authorize URL
and reading the answer, state checked before any code is taken."""

from __future__ import annotations

import pytest

from sublane_desktop.accounts import pkce
from sublane_desktop.accounts.login_flow import flows


def test_the_challenge_is_rfc_7636s_s256() -> None:
    # RFC 7636 appendix B
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert pkce.challenge_of(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_each_sign_in_draws_a_new_verifier_and_state() -> None:
    a, b = pkce.new_pkce(), pkce.new_pkce()
    assert a.verifier != b.verifier and 43 <= len(a.verifier) <= 128
    assert a.challenge == pkce.challenge_of(a.verifier)
    assert pkce.new_state() != pkce.new_state() and len(pkce.new_state()) >= 43


def test_a_redirect_with_this_sign_ins_state_gives_its_code() -> None:
    assert pkce.read_query({"code": "c1", "state": "s"}, "s") == pkce.Answer("c1")


@pytest.mark.parametrize("query", [{"code": "c1", "state": "t"}, {"code": "c1"}])
def test_another_or_no_state_is_refused_without_naming_the_code(query) -> None:
    with pytest.raises(pkce.AnswerError) as err:
        pkce.read_query(query, "s")
    assert "state does not match" in str(err.value) and "c1" not in str(err.value)


def test_the_providers_error_is_said_and_a_missing_code_too() -> None:
    with pytest.raises(pkce.AnswerError, match="refused the sign-in: access_denied"):
        pkce.read_query({"error": "access_denied", "state": "s"}, "s")
    with pytest.raises(pkce.AnswerError, match="no authorization code"):
        pkce.read_query({"state": "s"}, "s")


def test_a_pasted_answer_in_each_form() -> None:
    url = "http://localhost:1455/auth/callback?code=c2&state=s"
    assert pkce.read_pasted(f"  {url}\n", "s") == pkce.Answer(
        "c2", "http://localhost:1455/auth/callback"
    )
    assert pkce.read_pasted("c3#s", "s") == pkce.Answer("c3")  # Anthropic's paste-back page
    assert pkce.read_pasted("4/0bare-code", "s") == pkce.Answer("4/0bare-code")
    for wrong in ("c3#t", "http://localhost:1/cb?code=c&state=t"):
        with pytest.raises(pkce.AnswerError, match="state does not match"):
            pkce.read_pasted(wrong, "s")
    for empty in ("", "  \n"):
        with pytest.raises(pkce.AnswerError, match="nothing was pasted"):
            pkce.read_pasted(empty, "s")
    with pytest.raises(pkce.AnswerError, match="spaces"):
        pkce.read_pasted("two words", "s")


def test_the_authorize_url_carries_the_flows_parameters() -> None:
    claude = flows()["claude"]
    url = pkce.authorize_url(
        claude.authorize_endpoint({}),
        claude.authorize_params("http://localhost:5/callback", "ch", "st"),
    )
    assert url.startswith("https://claude.ai/oauth/authorize?response_type=code&client_id=")
    assert "code_challenge=ch&code_challenge_method=S256&state=st&code=true" in url
    moved = claude.token_endpoint({"SUBLANE_CLAUDE_AUTH_BASE_URL": "http://127.0.0.1:9/"})
    assert moved == "http://127.0.0.1:9/v1/oauth/token"
    assert flows()["codex"].token_endpoint({}) == "https://auth.openai.com/oauth/token"
    assert flows()["antigravity"].authorize_endpoint({}) == (
        "https://accounts.google.com/o/oauth2/v2/auth"
    )
