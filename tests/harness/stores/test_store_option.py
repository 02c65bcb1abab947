"""The `--store` option read into a kind of store: a value that does not parse is refused
without being quoted (any part of it may be the password), and a URL whose authority has
a second '@' (unencoded in a password) is never shown with what the parse took for a host."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.errors import StoreError
from killpoint.stores import EXPECTED, clean_authority, shown, store_kind
from killpoint.stores.postgresql import PostgresStores

REPO = Path(__file__).resolve().parents[3]
SECRET = "SECRETPW"
UNPARSED = [
    f"u:{SECRET}@127.0.0.1",  # no scheme at all
    f"postgresql+psycopg//u:{SECRET}@h/db",  # ':' left out
    f"postgresql+psycopg:/u:{SECRET}@h/db",  # one '/' left out
    f"post gres://u:{SECRET}@h/db",  # not a driver name
    f"postgresql+psycopg://u:{SECRET}@::1:5432/db",  # IPv6 host without its brackets
    f"postgresql+psycopg://u:{SECRET}@x@[::1]:5432/db",  # an '@' and an IPv6 host
]
# The password is SECRET@PW: SQLAlchemy ends it at the first '@' and takes PW@127.0.0.1
# for the host, which the driver's "failed to resolve host" would print.
TWO_ATS = "postgresql+psycopg://u:SECRET@PW@127.0.0.1:1/db"


def leaked(text: str, option: str) -> list[str]:
    """The parts of `option` that are the password, or may be, found in `text`."""
    return [part for part in (SECRET, "SECRET", "PW@", option) if part in text]


@pytest.mark.parametrize("option", UNPARSED)
def test_a_value_that_does_not_parse_is_refused_without_being_quoted(option: str) -> None:
    with pytest.raises(StoreError) as caught:
        store_kind(option)
    message = str(caught.value)
    assert [] == leaked(message, option)
    assert EXPECTED in message  # the shape it must have
    assert "<a store URL that cannot be parsed>" == shown(option)


def test_a_port_that_is_no_number_says_so_and_how_to_write_an_ipv6_host() -> None:
    with pytest.raises(StoreError, match=r"port is not a number.*IPv6 host in brackets"):
        store_kind(UNPARSED[4])
    with pytest.raises(StoreError, match="%40"):
        store_kind(UNPARSED[5])


def test_a_missing_separator_is_named() -> None:
    for option in UNPARSED[:3]:
        with pytest.raises(StoreError, match="no '://' after its scheme"):
            store_kind(option)


def test_another_kind_of_url_is_named_without_its_password() -> None:
    with pytest.raises(StoreError) as caught:
        store_kind(f"mysql://u:{SECRET}@h/db")
    assert "'mysql://u:***@h/db' uses 'mysql'" in str(caught.value)


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+psycopg"])
def test_libpqs_own_schemes_are_taken_for_the_psycopg_driver(scheme: str) -> None:
    """`postgres://` is libpq's alias of `postgresql://` (and what many providers hand out):
    both are read as the server they name, connected to with psycopg."""
    option = f"{scheme}://u:{SECRET}@h:5432/db"
    assert "postgresql" == store_kind(option)
    assert "postgresql+psycopg://u:***@h:5432/db" == PostgresStores(option).shown()


@pytest.mark.parametrize("option", UNPARSED[:3])
def test_the_command_line_refuses_it_in_one_line_without_it(tmp_path: Path, option: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--store", option,
         "--scenarios", "research", "--points", "boundaries",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
        cwd=REPO, capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip
    assert 2 == result.returncode
    assert [] == leaked(result.stderr, option)
    assert 1 == len(result.stderr.strip().splitlines()), result.stderr


class TestASecondAt:
    def test_is_not_a_clean_authority(self) -> None:
        assert not clean_authority(TWO_ATS)
        assert not clean_authority("postgresql+psycopg://u@x:pw@h/db")
        assert clean_authority("postgresql+psycopg://u:p%40w@h/db")
        assert clean_authority("postgresql+psycopg://u:pw@h/d@b")  # the database's '@'
        assert clean_authority("postgresql+psycopg://h/db")

    def test_is_shown_without_user_or_password(self) -> None:
        assert "postgresql+psycopg://***@127.0.0.1:1/db" == shown(TWO_ATS)
        assert "postgresql+psycopg://***@127.0.0.1:1/db" == PostgresStores(TWO_ATS).shown()

    def test_a_failed_connection_names_no_host_and_suggests_percent_encoding(self) -> None:
        with pytest.raises(StoreError) as caught:
            PostgresStores(TWO_ATS).check()
        message = str(caught.value)
        assert [] == leaked(message, TWO_ATS)
        assert "%40" in message

    def test_a_clean_url_still_names_the_host_it_cannot_resolve(self) -> None:
        with pytest.raises(StoreError, match=r"'no-such-host\.invalid'"):
            PostgresStores(f"postgresql+psycopg://u:{SECRET}@no-such-host.invalid:1/db").check()
