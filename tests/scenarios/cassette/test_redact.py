# ruff: noqa: SIM300 - tests assert `expected == actual`
"""What a cassette never holds: credential headers, and the fields the user names."""

from __future__ import annotations

import pytest

from killpoint.scenarios.cassette.redact import REDACTED, PathError, Redactions, parse_path


def test_paths_read_keys_indexes_and_wildcards() -> None:
    assert ("input", "*", "content") == parse_path("$.input[*].content")
    assert ("output", 0, "id") == parse_path("$.output[0].id")
    assert ("a b", "*") == parse_path("$['a b'].*")


@pytest.mark.parametrize("bad", ["input.content", "$", "$.a..b", "$.a[x]"])
def test_a_path_that_cannot_be_read_names_the_form(bad: str) -> None:
    with pytest.raises(PathError, match="redaction path"):
        parse_path(bad)


def test_named_fields_are_redacted_in_a_copy() -> None:
    body = {"user": "u-42", "input": [{"content": "a"}, {"content": "b", "x": 1}], "n": 3}
    rules = Redactions(paths=("$.user", "$.input[*].content", "$.missing.deep"))
    redacted, changed = rules.body(body)
    assert changed
    assert {
        "user": REDACTED,
        "input": [{"content": REDACTED}, {"content": REDACTED, "x": 1}],
        "n": 3,
    } == redacted
    assert "u-42" == body["user"]  # the original is untouched
    assert (body, False) == Redactions(paths=("$.nothing",)).body(body)


def test_credential_and_named_headers_are_never_kept() -> None:
    headers = [
        ("Authorization", "Bearer sk-1"),
        ("X-Api-Key", "sk-2"),
        ("OpenAI-Organization", "org-1"),
        ("Content-Length", "12"),
        ("X-Tenant", "acme"),
        ("Content-Type", "application/json"),
    ]
    assert {"content-type": "application/json"} == Redactions(headers=("x-tenant",)).kept_headers(
        headers
    )
