"""A store URL as it may be shown: without its password, and without any part of it when
the URL cannot be told apart into user, password and host. Its own module, so that the
backends (killpoint.stores.postgresql) and the option's reader (killpoint.stores) both use
it without importing each other."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError


def clean_authority(option: str) -> bool:
    """Whether the part of a store URL between '://' and the database has at most the one
    '@' that ends the user and password: SQLAlchemy splits at the first '@', so with
    another one (unencoded in a password) the rest of the password becomes the "host", and
    a message naming that host would print part of the password."""
    try:
        url = make_url(option)
    except (ArgumentError, ValueError):
        return False
    return "@" not in (url.username or "") and "@" not in (url.host or "")


def shown(option: str) -> str:
    """A store option or URL without its password: a placeholder when it cannot be parsed,
    and no user or password at all when its authority has more than one '@' (where the
    parse put the password's end, the "host" holds the rest of it)."""
    if option == "sqlite":
        return option
    try:
        url = make_url(option)
    except Exception:
        return "<a store URL that cannot be parsed>"
    if not clean_authority(option):
        # What follows the last '@' is the host the user meant; the rest is user and password.
        # (URL.set cannot clear a field: None there means "unchanged".)
        bare = URL.create(
            url.drivername,
            host=(url.host or "").rpartition("@")[2] or None,
            port=url.port,
            database=url.database,
            query=url.query,
        )
        scheme, _, rest = bare.render_as_string().partition("://")
        return f"{scheme}://***@{rest}"
    return url.render_as_string(hide_password=True)


__all__ = ["clean_authority", "shown"]
