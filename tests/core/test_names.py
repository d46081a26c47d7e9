"""What a person may name things and where an account may point (SPEC §2 bad input): the rule
itself, word for word. tests/cli/test_bad_input.py drives it through the real `sublane` command,
in subprocesses (which mutation testing cannot follow), and checks nothing is changed."""

from __future__ import annotations

import pytest

from sublane_desktop.core.names import BadInput, check_base_url, check_name


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("\t", "must not be empty"),
        ("lap\ntop", "must be one line of visible text"),
        ("bell\x07", "must be one line of visible text"),
        (" bob", "must not start or end with a space"),
        ("bob ", "must not start or end with a space"),
    ],
)
def test_a_name_that_is_blank_on_two_lines_or_padded_is_refused_in_words(name, problem):
    with pytest.raises(BadInput) as refused:
        check_name(name, "key")
    assert str(refused.value) == f"key name {problem}"


@pytest.mark.parametrize("name", ["work", "bob smith", "Zoë — laptop", "a"])
def test_a_visible_one_line_name_is_kept_as_given(name):
    assert check_name(name, "account") == name


BAD_URLS = {
    "": "is empty",
    "not a url": "contains spaces",
    " https://example.com": "contains spaces",
    "https://example.com\n": "contains spaces",
    "https://exa\x00mple.com": "contains spaces",
    "api.anthropic.com": "is not an http or https address",
    "ftp://example.com": "is not an http or https address",
    "https://": "has no host",
    "http://:8080/v1": "has no host",
    "https://example.com:99999": "is not a URL",
    "https://example.com:port": "is not a URL",
    "http://[::1": "is not a URL",
    "https://example.com/v1?key=1": "must not carry a query or fragment",
    "https://example.com/v1#top": "must not carry a query or fragment",
}


@pytest.mark.parametrize("url", list(BAD_URLS))
def test_a_base_url_that_is_not_http_with_a_host_is_refused_in_words(url):
    with pytest.raises(BadInput) as refused:
        check_base_url(url)
    assert str(refused.value) == (
        f"base URL {url!r} {BAD_URLS[url]}: give an http:// or https:// address with a host,"
        " e.g. https://api.anthropic.com"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "https://gateway.example.com/anthropic/",
        "HTTPS://API.EXAMPLE.COM",
        "http://[::1]:9000",
    ],
)
def test_a_good_base_url_is_kept_as_given(url):
    assert check_base_url(url) == url
