"""The one family of errors killpoint raises on purpose.

Every such error is a KillpointError, and also the built-in it means (a bad value is a
ValueError, a mount that fails an OSError), so `except ValueError` keeps working where it
did. A face (the CLI, the pytest plugin) catches KillpointError and shows its message as
one line; anything else escaping is a bug in killpoint.
"""

from __future__ import annotations


class KillpointError(Exception):
    """Base of every error killpoint raises on purpose: bad input, an unusable store, a
    report that cannot be read or written, an interrupted campaign."""


__all__ = ["KillpointError"]
