"""Cassettes: a user's own agent recorded once against its real provider, replayed by the
scripted model under every crash.

`file` is the format, `history` what a reply is keyed by, `replies` what a recorded reply
said, `redact` what a cassette never holds, `replay` the cassette as the scripted model's
replies, `recorder` the recording proxy (imported on its own: it needs the model).
"""

from __future__ import annotations

from .file import Cassette, CassetteError, Interaction, Outcome, Response, dump, from_json, load
from .history import History
from .redact import PathError, Redactions
from .replay import UNRECORDED_LOG, Replayer, unrecorded

__all__ = [
    "UNRECORDED_LOG",
    "Cassette",
    "CassetteError",
    "History",
    "Interaction",
    "Outcome",
    "PathError",
    "Redactions",
    "Replayer",
    "Response",
    "dump",
    "from_json",
    "load",
    "unrecorded",
]
