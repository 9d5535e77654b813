from __future__ import annotations

import pytest

from rotscope._util.urls import url_problem, urls_problem


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "https://api.example.com", "http://[::1]:9/v1", "http://h/p?q=1"]
)
def test_a_server_address_passes(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://h\n/v1", "U+000A"),
        ("http://h\t:1", "U+0009"),
        ("http://h/v1\x1b[2J", "U+001B"),
        ("http://h\u202e/v1", "U+202E"),
        ("http://h /v1", "U+0020"),
        ("ftp://h/v1", "http(s)"),
        ("http:///v1", "host"),
        ("http://h:99999", "http(s)"),
        ("h:8000", "http(s)"),
    ],
)
def test_a_bad_address_says_why(url: str, said: str) -> None:
    problem = url_problem(url)
    assert problem is not None and said in problem


def test_replicas_are_checked_one_by_one_spaces_around_commas_allowed() -> None:
    assert urls_problem("http://a:1, http://b:2") is None
    problem = urls_problem("http://a:1,http://b\x00:2")
    assert problem is not None and "'http://b\\x00:2'" in problem and "U+0000" in problem
    assert urls_problem(" , ") is not None
