"""The corpus's error: a folder, a file or a state this killpoint cannot use."""

from __future__ import annotations

from killpoint.errors import KillpointError


class CorpusError(KillpointError, ValueError):
    """A corpus folder this killpoint cannot use (missing, malformed, another schema, a
    file that is not plain data or passes a size limit); the message names the file, and
    the line or field where there is one. The command exits 2."""


__all__ = ["CorpusError"]
