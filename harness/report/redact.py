"""No secret in any output: passwords in URLs and the values of secret-looking environment
variables are replaced before anything is printed or written.

Used on the command line a report records, on every report document as a whole (JSON and
HTML are redacted as text, after they are made, so no field can be missed), and on what
is shown of workers' output.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

MASK = "***"
# scheme://user:password@host — the password is what lies between ':' and '@'.
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)(?P<password>[^@\s/]+)(?=@)")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
MIN_SECRET = 6  # shorter values are too common to replace anywhere they appear

_extra: set[str] = set()


def remember(secret: str | None) -> None:
    """A value to be masked wherever it appears (a store URL's password, say)."""
    if secret and len(secret) >= MIN_SECRET:
        _extra.add(secret)


def environment_secrets(environ: dict[str, str] | None = None) -> set[str]:
    env = os.environ if environ is None else environ
    return {
        value
        for name, value in env.items()
        if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET
    }


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with URL passwords and every known secret value masked."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    for secret in sorted({*secrets, *_extra, *environment_secrets()}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_argv(argv: Iterable[str]) -> list[str]:
    return [redact(arg) for arg in argv]


__all__ = ["MASK", "environment_secrets", "redact", "redact_argv", "remember"]
